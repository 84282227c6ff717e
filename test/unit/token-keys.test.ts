/**
 * Which keys verify a token: the HS256 secret (and the previous one during a rotation),
 * RS256/ES256 public keys from PEM files or a local JWKS with two `kid`s during a rotation.
 * Each key verifies its own algorithm only; a replica configured with public keys holds no
 * signing key at all.
 */
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import jwt from 'jsonwebtoken';
import { afterAll, describe, expect, it } from 'vitest';
import { signingKeyFromPem } from '../../src/auth/keys.js';
import { signToken, verifyToken } from '../../src/auth/tokens.js';
import { ConfigError, loadConfig } from '../../src/config.js';

const dir = mkdtempSync(join(tmpdir(), 'vigil-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const pem = (key: KeyObject) => key.export({ type: key.type === 'private' ? 'pkcs8' : 'spki', format: 'pem' }).toString();
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ecNext = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = (key: KeyObject, kid: string) => ({ ...key.export({ format: 'jwk' }), kid, use: 'sig', alg: 'ES256' });

const secret = randomBytes(32).toString('hex');
const signed = (key: KeyObject, alg: 'RS256' | 'ES256', kid?: string) =>
  signToken({ key, alg, ...(kid ? { kid } : {}) }, { sub: 'alice', admin: true }, 3600);

describe('RS256 / ES256 public keys (JWT_PUBLIC_KEY_FILE)', () => {
  const config = loadConfig({
    DATA_DIR: join(dir, 'data'),
    JWT_PUBLIC_KEY_FILE: `${file('rsa.pem', pem(rsa.publicKey))}, ${file('ec.pem', pem(ec.publicKey))}`,
  });

  it('holds no signing key: no secret is generated or accepted', () => {
    expect(config.jwtSecret).toBeUndefined();
    expect(existsSync(join(dir, 'data', 'jwt-secret'))).toBe(false);
    expect(() => verifyToken(config.jwtSecret, signToken(secret, { sub: 'alice' }), config.tokens)).toThrow(/not accepted/);
  });

  it('accepts tokens signed by either private key, each with its own algorithm', () => {
    expect(verifyToken(config.jwtSecret, signed(rsa.privateKey, 'RS256'), config.tokens)).toMatchObject({ userId: 'alice', admin: true });
    expect(verifyToken(config.jwtSecret, signed(ec.privateKey, 'ES256'), config.tokens)).toMatchObject({ userId: 'alice', admin: true });
    expect(() => verifyToken(config.jwtSecret, signed(stranger.privateKey, 'ES256'), config.tokens)).toThrow(/not valid/);
  });

  it('refuses an HS256 token whose "secret" is the public key (algorithm confusion) and an unsigned token', () => {
    const forged = jwt.sign({ sub: 'mallory', role: 'admin', exp: Math.floor(Date.now() / 1000) + 60 }, pem(rsa.publicKey), {
      algorithm: 'HS256',
    });
    expect(() => verifyToken(config.jwtSecret, forged, config.tokens)).toThrow();
    const none = jwt.sign({ sub: 'mallory', role: 'admin', exp: Math.floor(Date.now() / 1000) + 60 }, null, { algorithm: 'none' });
    expect(() => verifyToken(config.jwtSecret, none, config.tokens)).toThrow();
  });

  it('still applies exp, the maximum lifetime, iss and aud', () => {
    const c = loadConfig({ DATA_DIR: join(dir, 'data'), JWT_PUBLIC_KEY_FILE: join(dir, 'ec.pem'), JWT_ISSUER: 'https://id.example' });
    const sign = (o: jwt.SignOptions, claims: object = {}) =>
      jwt.sign({ sub: 'a', ...claims }, ec.privateKey, { algorithm: 'ES256', ...o });
    expect(verifyToken(c.jwtSecret, sign({ expiresIn: 60, issuer: 'https://id.example' }), c.tokens).userId).toBe('a');
    expect(() => verifyToken(c.jwtSecret, sign({ expiresIn: 60, issuer: 'https://evil.example' }), c.tokens)).toThrow(/issuer/);
    expect(() => verifyToken(c.jwtSecret, sign({ issuer: 'https://id.example' }), c.tokens)).toThrow(/exp/);
    expect(() => verifyToken(c.jwtSecret, sign({ expiresIn: -10, issuer: 'https://id.example' }), c.tokens)).toThrow(/expired/);
  });

  it('is accepted in cluster mode without JWT_SECRET', () => {
    expect(
      loadConfig({
        REDIS_URL: 'redis://127.0.0.1:6379',
        CONTACT_ID_KEY: randomBytes(32).toString('hex'),
        JWT_PUBLIC_KEY_FILE: join(dir, 'ec.pem'),
      }).jwtSecret,
    ).toBeUndefined();
    expect(() => loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' })).toThrow(
      /JWT_SECRET: required .* unless JWT_PUBLIC_KEY_FILE or JWT_JWKS_FILE/,
    );
  });
});

describe('rotation: two keys accepted during a change', () => {
  it('a JWKS with two kids: both verify, each only the tokens naming it; a third key does not', () => {
    const jwks = file('jwks.json', JSON.stringify({ keys: [jwk(ec.publicKey, '2025-01'), jwk(ecNext.publicKey, '2025-07')] }));
    const c = loadConfig({ DATA_DIR: join(dir, 'data'), JWT_JWKS_FILE: jwks });
    expect(verifyToken(c.jwtSecret, signed(ec.privateKey, 'ES256', '2025-01'), c.tokens).userId).toBe('alice');
    expect(verifyToken(c.jwtSecret, signed(ecNext.privateKey, 'ES256', '2025-07'), c.tokens).userId).toBe('alice');
    // no kid: every key of its algorithm is tried
    expect(verifyToken(c.jwtSecret, signed(ecNext.privateKey, 'ES256'), c.tokens).userId).toBe('alice');
    // a kid names the key: signed by the other one, it is refused
    expect(() => verifyToken(c.jwtSecret, signed(ecNext.privateKey, 'ES256', '2025-01'), c.tokens)).toThrow(/not valid/);
    expect(() => verifyToken(c.jwtSecret, signed(stranger.privateKey, 'ES256', '2025-07'), c.tokens)).toThrow(/not valid/);
    expect(() => verifyToken(c.jwtSecret, signed(stranger.privateKey, 'ES256', 'unknown'), c.tokens)).toThrow(/not valid/);
  });

  it('JWT_SECRET and JWT_SECRET_PREVIOUS: tokens of both are accepted, no other', () => {
    const previous = randomBytes(32).toString('base64');
    const c = loadConfig({ DATA_DIR: join(dir, 'data'), JWT_SECRET: secret, JWT_SECRET_PREVIOUS: previous });
    expect(verifyToken(c.jwtSecret, signToken(secret, { sub: 'new' }), c.tokens).userId).toBe('new');
    expect(verifyToken(c.jwtSecret, signToken(previous, { sub: 'old' }), c.tokens).userId).toBe('old');
    expect(() => verifyToken(c.jwtSecret, signToken(randomBytes(32).toString('hex'), { sub: 'x' }), c.tokens)).toThrow(/not valid/);
    // an expired token signed with the previous secret says so
    const expired = jwt.sign({ sub: 'old', exp: Math.floor(Date.now() / 1000) - 10 }, previous, { algorithm: 'HS256' });
    expect(() => verifyToken(c.jwtSecret, expired, c.tokens)).toThrow(/expired/);
  });

  it('JWT_SECRET_PREVIOUS needs JWT_SECRET and must differ from it', () => {
    expect(() => loadConfig({ DATA_DIR: join(dir, 'data'), JWT_SECRET_PREVIOUS: secret })).toThrow(
      /JWT_SECRET_PREVIOUS: set only with JWT_SECRET/,
    );
    expect(() => loadConfig({ JWT_SECRET: secret, JWT_SECRET_PREVIOUS: secret })).toThrow(/JWT_SECRET_PREVIOUS: must differ/);
  });
});

describe('a key a replica must not use stops start-up, naming the setting and the file', () => {
  const refused = (name: string, env: 'JWT_PUBLIC_KEY_FILE' | 'JWT_JWKS_FILE', text: string, why: RegExp) => {
    const path = file(name, text);
    expect(() => loadConfig({ DATA_DIR: join(dir, 'data'), [env]: path })).toThrow(ConfigError);
    expect(() => loadConfig({ DATA_DIR: join(dir, 'data'), [env]: path })).toThrow(
      new RegExp(`^${env}: ${path.replace(/[.\\/]/g, '\\$&')} ${why.source}`),
    );
  };

  it.each([
    ['a private key', 'private.pem', pem(ec.privateKey), /holds a private key/],
    ['a short RSA key', 'rsa1024.pem', pem(generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey), /is an RSA key of 1024 bits/],
    ['a P-384 key', 'p384.pem', pem(generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey), /is an EC key on secp384r1/],
    ['an Ed25519 key', 'ed.pem', pem(generateKeyPairSync('ed25519').publicKey), /is a key of type ed25519/],
    ['no PEM at all', 'empty.pem', 'nothing here', /holds no PEM block/],
  ])('PEM: %s', (_what, name, text, why) => refused(name, 'JWT_PUBLIC_KEY_FILE', text, why));

  it.each([
    ['a private JWK', { keys: [{ ...ec.privateKey.export({ format: 'jwk' }), kid: 'k' }] }, /key "k" holds private or secret material/],
    ['a symmetric JWK', { keys: [{ kty: 'oct', k: 'c2VjcmV0', kid: 's' }] }, /key "s" holds private or secret material/],
    [
      'an alg that does not fit the key',
      { keys: [{ ...jwk(ec.publicKey, 'k'), alg: 'RS256' }] },
      /key "k" says alg RS256, but it is a key for ES256/,
    ],
    ['a kid twice', { keys: [jwk(ec.publicKey, 'k'), jwk(ecNext.publicKey, 'k')] }, /key "k" appears twice/],
    ['only encryption keys', { keys: [{ ...jwk(ec.publicKey, 'k'), use: 'enc' }] }, /holds no signing key/],
    ['not a JWKS', { kty: 'EC' }, /is not a JWKS document/],
  ])('JWKS: %s', (_what, doc, why) => refused('bad.json', 'JWT_JWKS_FILE', JSON.stringify(doc), why));

  it('a missing file', () => {
    expect(() => loadConfig({ JWT_PUBLIC_KEY_FILE: join(dir, 'missing.pem') })).toThrow(
      /^JWT_PUBLIC_KEY_FILE: cannot read .*missing\.pem \(ENOENT\)/,
    );
  });
});

describe('signing with a private key (scripts/token.ts --key)', () => {
  it('takes the algorithm from the key and names it by kid', () => {
    const key = signingKeyFromPem(pem(rsa.privateKey));
    expect(key.alg).toBe('RS256');
    const token = signToken({ ...key, kid: 'r1' }, { sub: 'bob' }, 60);
    expect(jwt.decode(token, { complete: true })?.header).toMatchObject({ alg: 'RS256', kid: 'r1' });
    expect(signingKeyFromPem(pem(ec.privateKey)).alg).toBe('ES256');
  });
});
