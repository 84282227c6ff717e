/**
 * A template or guessable JWT_SECRET stops start-up: with it anyone could sign a moderator's
 * token. A generated secret always passes.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { secretWeakness } from '../../src/config/secret-strength.js';

const ROOT = join(import.meta.dirname, '..', '..');
const CLUSTER = { REDIS_URL: 'redis://127.0.0.1:6379', CONTACT_ID_KEY: randomBytes(32).toString('hex') };
const templateSecret = (parse(readFileSync(join(ROOT, 'k8s', 'secret.example.yaml'), 'utf8')) as { stringData: { JWT_SECRET: string } })
  .stringData.JWT_SECRET;

describe('JWT_SECRET must be a real secret', () => {
  it('refuses the value k8s/secret.example.yaml ships, naming the variable and how to make one', () => {
    expect(templateSecret.length).toBeGreaterThanOrEqual(32);
    expect(() => loadConfig({ ...CLUSTER, JWT_SECRET: templateSecret })).toThrow(ConfigError);
    expect(() => loadConfig({ ...CLUSTER, JWT_SECRET: templateSecret })).toThrow(
      /JWT_SECRET: is the placeholder of k8s\/secret\.example\.yaml; generate one with `openssl rand -hex 32`/,
    );
  });

  it.each([
    ['jwt.io’s example, padded', 'your-256-bit-secret-your-256-bit-secret'],
    ['a placeholder phrase', 'change-me-to-a-long-random-string-please'],
    ['a phrase with "secret"', 'my-super-secret-jwt-key-for-production'],
    ['a password', 'Password1234567890Password1234567890'],
    ['one character repeated', 'x'.repeat(32)],
    ['one piece repeated', 'abc1'.repeat(10)],
    ['counting', '12345678901234567890123456789012'],
    ['the alphabet', 'abcdefghijklmnopqrstuvwxyz0123456789'],
    ['few distinct characters', 'aabbaabbabababbbaaabbbababbabaabbbab'],
  ])('refuses %s', (_what, secret) => {
    expect(secret.length).toBeGreaterThanOrEqual(32);
    expect(secretWeakness(secret)).toBeDefined();
    expect(() => loadConfig({ ...CLUSTER, JWT_SECRET: secret })).toThrow(/JWT_SECRET: /);
    // the message never quotes the secret
    expect(() => loadConfig({ ...CLUSTER, JWT_SECRET: secret })).not.toThrow(secret);
  });

  it('refuses a weak JWT_SECRET_PREVIOUS the same way', () => {
    const JWT_SECRET = randomBytes(32).toString('hex');
    expect(() => loadConfig({ ...CLUSTER, JWT_SECRET, JWT_SECRET_PREVIOUS: templateSecret })).toThrow(
      /JWT_SECRET_PREVIOUS: is the placeholder/,
    );
  });

  it('accepts every generated secret: 32 random bytes in hex, base64 or base64url (fast-check)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
        for (const encoding of ['hex', 'base64', 'base64url'] as const) {
          const secret = Buffer.from(bytes).toString(encoding);
          expect(secretWeakness(secret), `${encoding} ${secret}`).toBeUndefined();
        }
      }),
      { numRuns: 2000 },
    );
    expect(loadConfig({ ...CLUSTER, JWT_SECRET: randomBytes(32).toString('base64') }).jwtSecret).toBeDefined();
  });

  it('checks the secret kept in DATA_DIR too, and generates a good one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigil-secret-'));
    try {
      const generated = loadConfig({ DATA_DIR: dir }).jwtSecret ?? '';
      expect(secretWeakness(generated)).toBeUndefined();
      writeFileSync(join(dir, 'jwt-secret'), 'changeme');
      expect(() => loadConfig({ DATA_DIR: dir })).toThrow(
        /JWT_SECRET: the secret kept in .*jwt-secret is shorter than 32 characters; delete the file/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('CONTACT_ID_KEY: a real secret, shared by replicas, never a constant', () => {
  const JWT_SECRET = randomBytes(32).toString('hex');
  const REDIS = { REDIS_URL: 'redis://127.0.0.1:6379', JWT_SECRET };

  it('is required in cluster mode, and refused when it is a placeholder', () => {
    expect(() => loadConfig(REDIS)).toThrow(/CONTACT_ID_KEY: required when REDIS_URL or MONGODB_URI is set/);
    expect(() => loadConfig({ ...REDIS, CONTACT_ID_KEY: templateSecret })).toThrow(/CONTACT_ID_KEY: is the placeholder/);
    const key = randomBytes(32).toString('hex');
    expect(loadConfig({ ...REDIS, CONTACT_ID_KEY: key }).contactIds).toEqual({ key });
  });

  it('CONTACT_ID_KEY_PREVIOUS: only with CONTACT_ID_KEY, and another value', () => {
    const key = randomBytes(32).toString('hex');
    const previous = randomBytes(32).toString('hex');
    expect(loadConfig({ ...REDIS, CONTACT_ID_KEY: key, CONTACT_ID_KEY_PREVIOUS: previous }).contactIds).toEqual({ key, previous });
    expect(() => loadConfig({ ...REDIS, CONTACT_ID_KEY: key, CONTACT_ID_KEY_PREVIOUS: key })).toThrow(/must differ/);
    const dir = mkdtempSync(join(tmpdir(), 'vigil-cik-'));
    try {
      expect(() => loadConfig({ DATA_DIR: dir, JWT_SECRET, CONTACT_ID_KEY_PREVIOUS: previous })).toThrow(/set only with CONTACT_ID_KEY/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('embedded without it: a random key generated once into DATA_DIR and kept (npm start needs no setup)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigil-cik-'));
    try {
      const first = loadConfig({ DATA_DIR: dir, JWT_SECRET }).contactIds.key;
      expect(secretWeakness(first)).toBeUndefined();
      expect(readFileSync(join(dir, 'contact-id-key'), 'utf8')).toBe(first);
      expect(loadConfig({ DATA_DIR: dir, JWT_SECRET }).contactIds.key).toBe(first);
      const other = mkdtempSync(join(tmpdir(), 'vigil-cik-'));
      try {
        expect(loadConfig({ DATA_DIR: other, JWT_SECRET }).contactIds.key).not.toBe(first);
      } finally {
        rmSync(other, { recursive: true, force: true });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
