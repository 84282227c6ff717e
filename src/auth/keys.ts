/**
 * Keys of RS256/ES256 tokens: the public keys replicas verify with (PEM, or a JWKS file) and
 * the private key `scripts/token.ts --key` signs with. The algorithm follows from the key:
 * RSA of 2048 bits or more → RS256, EC on P-256 → ES256; no other key is accepted, and a
 * key never serves two algorithms. Errors say what is wrong with the key, not which file
 * (the caller names the file and the setting).
 */
import { createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';

export type AsymmetricAlg = 'RS256' | 'ES256';

export interface PublicKey {
  alg: AsymmetricAlg;
  key: KeyObject;
  /** the JWKS `kid`: a token naming it is checked against this key only */
  kid?: string;
}

export function algorithmOf(key: KeyObject): AsymmetricAlg {
  const type = key.asymmetricKeyType;
  const details = key.asymmetricKeyDetails;
  if (type === 'rsa') {
    const bits = details?.modulusLength ?? 0;
    if (bits < 2048) throw new Error(`is an RSA key of ${bits} bits; RS256 needs 2048 or more`);
    return 'RS256';
  }
  if (type === 'ec' && details?.namedCurve === 'prime256v1') return 'ES256';
  const what = type === 'ec' ? `an EC key on ${details?.namedCurve ?? 'an unknown curve'}` : `a key of type ${type ?? 'secret'}`;
  throw new Error(`is ${what}; only RSA (RS256) and EC P-256 (ES256) keys are accepted`);
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]+?-----END \1-----/g;

/** Every public key (or certificate) in a PEM text; a private key is refused: replicas hold public keys only. */
export function publicKeysFromPem(text: string): PublicKey[] {
  const blocks = [...text.matchAll(PEM_BLOCK)];
  if (blocks.length === 0) throw new Error('holds no PEM block (-----BEGIN PUBLIC KEY-----)');
  return blocks.map(([pem, label]) => {
    if (label?.includes('PRIVATE'))
      throw new Error('holds a private key: give replicas the public key only (`openssl pkey -in private.pem -pubout`)');
    const key = createPublicKey(pem);
    return { alg: algorithmOf(key), key };
  });
}

interface Jwk extends JsonWebKey {
  kid?: string;
  alg?: string;
  use?: string;
}

const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'] as const;

/** The signing keys of a JWKS document (`{"keys": [...]}`); keys for encryption (`use: "enc"`) are skipped. */
export function publicKeysFromJwks(text: string): PublicKey[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error('is not JSON');
  }
  const keys = (doc as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new Error('is not a JWKS document: expected {"keys": [...]}');
  const out: PublicKey[] = [];
  for (const [i, entry] of keys.entries()) {
    const jwk = entry as Jwk;
    const name = typeof jwk?.kid === 'string' ? `key "${jwk.kid}"` : `key ${i}`;
    if (typeof jwk !== 'object' || jwk === null) throw new Error(`${name} is not an object`);
    if (PRIVATE_JWK_MEMBERS.some((m) => m in jwk))
      throw new Error(`${name} holds private or secret material: give replicas the public keys only`);
    if (jwk.use !== undefined && jwk.use !== 'sig') continue;
    let key: KeyObject;
    try {
      key = createPublicKey({ key: jwk, format: 'jwk' });
    } catch (err) {
      throw new Error(`${name} is not a valid public key (${err instanceof Error ? err.message : String(err)})`, { cause: err });
    }
    const alg = algorithmOf(key);
    if (jwk.alg !== undefined && jwk.alg !== alg) throw new Error(`${name} says alg ${jwk.alg}, but it is a key for ${alg}`);
    if (jwk.kid !== undefined && out.some((k) => k.kid === jwk.kid)) throw new Error(`${name} appears twice`);
    out.push({ alg, key, ...(typeof jwk.kid === 'string' ? { kid: jwk.kid } : {}) });
  }
  if (out.length === 0) throw new Error('holds no signing key');
  return out;
}

/** The private key a token tool signs with (PEM): RS256 or ES256, by the key. */
export function signingKeyFromPem(text: string): { alg: AsymmetricAlg; key: KeyObject } {
  const key = createPrivateKey(text);
  return { alg: algorithmOf(key), key };
}
