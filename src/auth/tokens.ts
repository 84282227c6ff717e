/**
 * Bearer JWT, shared by REST and the Socket.IO handshake. `sub` is the user id;
 * `role: "admin"` marks a moderator; `name` is the display name used in SOS texts, made
 * plain like every other display name. Every token must carry `exp`, and may not live longer
 * than the policy's maximum (exp − iat, or exp − now when there is no iat); an `iat` in the
 * future (beyond the clock skew) is refused; `iss`/`aud` are checked when configured.
 * Whether the person revoked their tokens since `iat` is the caller's second step
 * (`isRevoked`, with the stamps of a `RevocationCheck`).
 * Signed with HS256 (a shared secret, and a previous one during its rotation) or, when
 * public keys are configured, RS256/ES256: each key verifies its own algorithm only.
 */
import { createSecretKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { DomainError } from '../domain/errors.js';
import { plainName } from '../domain/messages.js';
import type { AsymmetricAlg, PublicKey } from './keys.js';

export interface Principal {
  userId: string;
  admin: boolean;
  name?: string;
  /** when the token stops being valid (ms since epoch) */
  expiresAtMs: number;
  /** its `iat` (ms since epoch, whole seconds); absent when the token has none */
  issuedAtMs?: number;
}

/**
 * The people's "tokens not before" stamps (src/app/token-revocations.ts): a token issued at or
 * before its person's stamp is revoked. `fresh`: read the store now (a socket handshake); else
 * an answer up to the checker's cache age old may do.
 */
export interface RevocationCheck {
  notBefore(userIds: readonly string[], o?: { fresh?: boolean }): Promise<Map<string, number>>;
}

/**
 * Revoked when the person's stamp is not before the token's `iat`. `iat` has whole seconds, so a
 * token issued in the same second as the revocation is refused too (its holder asks again a
 * second later); a token without `iat` cannot say when it was issued and is refused once a stamp exists.
 */
export function isRevoked(p: Pick<Principal, 'issuedAtMs'>, notBeforeMs: number | undefined): boolean {
  if (notBeforeMs === undefined) return false;
  return p.issuedAtMs === undefined || p.issuedAtMs <= notBeforeMs;
}

export const tokenRevoked = () =>
  new DomainError(
    'unauthorized',
    'token_revoked',
    "the token was revoked (the person's tokens were revoked after it was issued); ask for a new one",
  );

/** A key that verifies tokens of one algorithm: a secret (HS256) or a public key (./keys.ts). */
export type VerifyKey = { alg: 'HS256'; key: KeyObject; kid?: undefined } | PublicKey;

export interface TokenPolicy {
  maxLifetimeSeconds: number;
  issuer?: string;
  audience?: string;
  /** keys accepted besides the secret: the previous secret during a rotation, RS256/ES256 public keys */
  keys?: readonly VerifyKey[];
  /** how far in the future an `iat` may be (the issuer's clock ahead of ours), seconds; default CLOCK_SKEW_SECONDS */
  clockSkewSeconds?: number;
}

/** An `iat` up to this far ahead of our clock is the issuer's clock running ahead, not a forged lifetime. */
export const CLOCK_SKEW_SECONDS = 60;
/** A token's `name` longest, after it is made plain. */
const NAME_MAX = 80;

/** Made plain like every display name (no controls, bidi, invisibles, links), at most NAME_MAX code points; empty: none. */
function plainDisplayName(raw: string): string | undefined {
  const plain = [...plainName(raw).trim()].slice(0, NAME_MAX).join('').trim();
  return plain || undefined;
}

/** What `signToken` signs with: a secret (HS256) or a private key (RS256/ES256), named by `kid` when a JWKS lists several. */
export type SigningKey = string | { alg: AsymmetricAlg; key: KeyObject; kid?: string };

export const DEFAULT_TOKEN_POLICY: TokenPolicy = { maxLifetimeSeconds: 30 * 24 * 3600 };

export const unauthorized = (message: string) => new DomainError('unauthorized', 'unauthorized', message);

/**
 * Given a string, jsonwebtoken first tries to parse it as a PEM public key (createPublicKey,
 * which throws) on every verify: a quarter of the CPU of a flood went there. A KeyObject
 * skips that; the last secret's key is kept.
 */
export const hs256Key = (secret: string): VerifyKey => ({ alg: 'HS256', key: createSecretKey(Buffer.from(secret, 'utf8')) });

let lastKey: { secret: string; key: VerifyKey } | undefined;
function secretKey(secret: string): VerifyKey {
  if (lastKey?.secret !== secret) lastKey = { secret, key: hs256Key(secret) };
  return lastKey.key;
}

/**
 * The keys worth trying on this token: of its algorithm, and the one its `kid` names when
 * a key has that kid. With one key configured jsonwebtoken checks the algorithm itself.
 */
function candidates(secret: string | undefined, token: string, more: readonly VerifyKey[] = []): readonly VerifyKey[] {
  const all = secret === undefined ? more : more.length === 0 ? [secretKey(secret)] : [secretKey(secret), ...more];
  if (all.length <= 1) return all;
  const header = jwt.decode(token, { complete: true })?.header;
  if (!header) return all.slice(0, 1); // malformed: one attempt says so
  const ofAlg = all.filter((k) => k.alg === header.alg);
  const named = header.kid === undefined ? [] : ofAlg.filter((k) => k.kid === header.kid);
  return named.length > 0 ? named : ofAlg;
}

function refusal(err: unknown): DomainError {
  return unauthorized(
    err instanceof jwt.TokenExpiredError
      ? 'the token has expired'
      : err instanceof jwt.JsonWebTokenError && /^jwt (issuer|audience) invalid/.test(err.message)
        ? `the token's ${err.message.includes('issuer') ? 'issuer (iss)' : 'audience (aud)'} is not accepted here`
        : 'the token is not valid',
  );
}

const badSignature = (err: unknown) => err instanceof jwt.JsonWebTokenError && err.message === 'invalid signature';

/** `secret`: the HS256 secret, if tokens may be signed with one; `policy.keys`: the other accepted keys. */
export function verifyToken(
  secret: string | undefined,
  token: string,
  policy: TokenPolicy = DEFAULT_TOKEN_POLICY,
  nowMs = Date.now(),
): Principal {
  const keys = candidates(secret, token, policy.keys);
  if (keys.length === 0) throw unauthorized("the token's algorithm is not accepted here");
  let claims: string | jwt.JwtPayload | undefined;
  let firstError: unknown;
  for (const k of keys) {
    try {
      claims = jwt.verify(token, k.key, {
        algorithms: [k.alg],
        clockTimestamp: Math.floor(nowMs / 1000),
        ...(policy.issuer ? { issuer: policy.issuer } : {}),
        ...(policy.audience ? { audience: policy.audience } : {}),
      });
      break;
    } catch (err) {
      // another key may have signed it; any other error comes after the signature was good
      if (!badSignature(err)) throw refusal(err);
      firstError ??= err;
    }
  }
  if (claims === undefined) throw refusal(firstError);
  if (typeof claims === 'string' || typeof claims.sub !== 'string' || claims.sub.length === 0 || claims.sub.length > 200) {
    throw unauthorized('the token has no subject');
  }
  if (typeof claims.exp !== 'number') throw unauthorized('the token has no expiry (exp); ask for a new one');
  const iat = typeof claims.iat === 'number' ? claims.iat : undefined;
  // a far-future iat would make exp − iat look short while the token lives for years
  if (iat !== undefined && iat > nowMs / 1000 + (policy.clockSkewSeconds ?? CLOCK_SKEW_SECONDS)) {
    throw new DomainError('unauthorized', 'token_issued_in_future', "the token's issue time (iat) is in the future; ask for a new one");
  }
  const from = iat ?? Math.floor(nowMs / 1000);
  if (claims.exp - from > policy.maxLifetimeSeconds) {
    throw unauthorized(`the token lives longer than the ${policy.maxLifetimeSeconds} s this service accepts; ask for a new one`);
  }
  const name = typeof claims.name === 'string' ? plainDisplayName(claims.name) : undefined;
  return {
    userId: claims.sub,
    admin: claims.role === 'admin',
    name,
    expiresAtMs: claims.exp * 1000,
    ...(iat === undefined ? {} : { issuedAtMs: iat * 1000 }),
  };
}

export function signToken(
  key: SigningKey,
  p: { sub: string; admin?: boolean; name?: string },
  expiresInSeconds = 7 * 24 * 3600,
  o: { issuer?: string; audience?: string } = {},
): string {
  const claims: Record<string, string> = {};
  if (p.admin) claims.role = 'admin';
  if (p.name) claims.name = p.name;
  const kid = typeof key === 'string' ? undefined : key.kid;
  return jwt.sign(claims, typeof key === 'string' ? key : key.key, {
    algorithm: typeof key === 'string' ? 'HS256' : key.alg,
    ...(kid ? { keyid: kid } : {}),
    subject: p.sub,
    expiresIn: expiresInSeconds,
    ...(o.issuer ? { issuer: o.issuer } : {}),
    ...(o.audience ? { audience: o.audience } : {}),
  });
}
