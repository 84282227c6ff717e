/**
 * Bearer JWT (HS256), shared by REST and the Socket.IO handshake. `sub` is the user id;
 * `role: "admin"` marks a moderator; `name` is the display name used in SOS texts.
 * Every token must carry `exp`, and may not live longer than the policy's maximum
 * (exp − iat, or exp − now when there is no iat); `iss`/`aud` are checked when configured.
 */
import { createSecretKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { DomainError } from '../domain/errors.js';

export interface Principal {
  userId: string;
  admin: boolean;
  name?: string;
  /** when the token stops being valid (ms since epoch) */
  expiresAtMs: number;
}

export interface TokenPolicy {
  maxLifetimeSeconds: number;
  issuer?: string;
  audience?: string;
}

export const DEFAULT_TOKEN_POLICY: TokenPolicy = { maxLifetimeSeconds: 30 * 24 * 3600 };

export const unauthorized = (message: string) => new DomainError('unauthorized', 'unauthorized', message);

/**
 * Given a string, jsonwebtoken first tries to parse it as a PEM public key (createPublicKey,
 * which throws) on every verify: a quarter of the CPU of a flood went there. A KeyObject
 * skips that; the last secret's key is kept.
 */
let lastKey: { secret: string; key: KeyObject } | undefined;
function secretKey(secret: string): KeyObject {
  if (lastKey?.secret !== secret) lastKey = { secret, key: createSecretKey(Buffer.from(secret, 'utf8')) };
  return lastKey.key;
}

export function verifyToken(secret: string, token: string, policy: TokenPolicy = DEFAULT_TOKEN_POLICY, nowMs = Date.now()): Principal {
  let claims: string | jwt.JwtPayload;
  try {
    claims = jwt.verify(token, secretKey(secret), {
      algorithms: ['HS256'],
      clockTimestamp: Math.floor(nowMs / 1000),
      ...(policy.issuer ? { issuer: policy.issuer } : {}),
      ...(policy.audience ? { audience: policy.audience } : {}),
    });
  } catch (err) {
    const why =
      err instanceof jwt.TokenExpiredError
        ? 'the token has expired'
        : err instanceof jwt.JsonWebTokenError && /^jwt (issuer|audience) invalid/.test(err.message)
          ? `the token's ${err.message.includes('issuer') ? 'issuer (iss)' : 'audience (aud)'} is not accepted here`
          : 'the token is not valid';
    throw unauthorized(why);
  }
  if (typeof claims === 'string' || typeof claims.sub !== 'string' || claims.sub.length === 0 || claims.sub.length > 200) {
    throw unauthorized('the token has no subject');
  }
  if (typeof claims.exp !== 'number') throw unauthorized('the token has no expiry (exp); ask for a new one');
  const from = typeof claims.iat === 'number' ? claims.iat : Math.floor(nowMs / 1000);
  if (claims.exp - from > policy.maxLifetimeSeconds) {
    throw unauthorized(`the token lives longer than the ${policy.maxLifetimeSeconds} s this service accepts; ask for a new one`);
  }
  const name = typeof claims.name === 'string' && claims.name.trim() ? claims.name.trim().slice(0, 80) : undefined;
  return { userId: claims.sub, admin: claims.role === 'admin', name, expiresAtMs: claims.exp * 1000 };
}

export function signToken(
  secret: string,
  p: { sub: string; admin?: boolean; name?: string },
  expiresInSeconds = 7 * 24 * 3600,
  o: { issuer?: string; audience?: string } = {},
): string {
  const claims: Record<string, string> = {};
  if (p.admin) claims.role = 'admin';
  if (p.name) claims.name = p.name;
  return jwt.sign(claims, secret, {
    algorithm: 'HS256',
    subject: p.sub,
    expiresIn: expiresInSeconds,
    ...(o.issuer ? { issuer: o.issuer } : {}),
    ...(o.audience ? { audience: o.audience } : {}),
  });
}
