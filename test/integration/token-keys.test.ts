/**
 * A Vigil that holds public keys only: RS256/ES256 tokens work on REST and Socket.IO, HS256
 * tokens do not (there is no secret to forge them with), and `npm run token -- --key` signs
 * with the private key the replicas never see.
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signToken } from '../../src/auth/tokens.js';
import { connect } from '../helpers/sockets.js';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';

const ROOT = join(import.meta.dirname, '..', '..');
const keysDir = mkdtempSync(join(tmpdir(), 'vigil-pubkeys-'));
const pem = (key: KeyObject) => key.export({ type: key.type === 'private' ? 'pkcs8' : 'spki', format: 'pem' }).toString();
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const write = (name: string, text: string) => {
  const path = join(keysDir, name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
};
const publicKeys = `${write('rsa.pub.pem', pem(rsa.publicKey))},${write('ec.pub.pem', pem(ec.publicKey))}`;

let v: TestVigil;
beforeAll(async () => {
  v = await startTestVigil({ JWT_PUBLIC_KEY_FILE: publicKeys }, { manualTicks: true });
});
afterAll(async () => {
  await v?.stop();
  rmSync(keysDir, { recursive: true, force: true });
});

describe('public keys only (JWT_PUBLIC_KEY_FILE)', () => {
  it('accepts RS256 and ES256 tokens on REST; no HS256 secret exists or is accepted', async () => {
    const rs = signToken({ alg: 'RS256', key: rsa.privateKey }, { sub: 'pk-alice' }, 3600);
    const es = signToken({ alg: 'ES256', key: ec.privateKey }, { sub: 'pk-mod', admin: true }, 3600);
    expect((await v.api(rs, 'GET', '/v1/timers')).status).toBe(200);
    expect((await v.api(es, 'GET', '/v1/admin/incidents')).status).toBe(200);
    expect(v.vigil.config.jwtSecret).toBeUndefined();
    expect(existsSync(join(v.dataDir, 'jwt-secret'))).toBe(false);
    const hs = signToken(randomBytes(32).toString('hex'), { sub: 'pk-mallory', admin: true }, 3600);
    const refused = await v.api(hs, 'GET', '/v1/admin/incidents');
    expect(refused.status).toBe(401);
    expect(refused.body.error.message).toMatch(/algorithm is not accepted/);
  });

  it('accepts them on Socket.IO, and refuses a token signed by another key', async () => {
    const rec = await connect(v.url, signToken({ alg: 'ES256', key: ec.privateKey }, { sub: 'pk-sock' }, 3600));
    rec.close();
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    await expect(connect(v.url, signToken({ alg: 'ES256', key: other }, { sub: 'pk-sock' }, 3600))).rejects.toThrow(/not valid/);
  });

  it('npm run token -- --key signs with the private key (the algorithm follows the key, --kid names it)', async () => {
    const privateFile = write('ec.key.pem', pem(ec.privateKey));
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', DATA_DIR: join(keysDir, 'data'), JWT_PUBLIC_KEY_FILE: publicKeys };
    const tsx = join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');
    const token = execFileSync(
      process.execPath,
      [tsx, 'scripts/token.ts', '--user', 'pk-tool', '--admin', '--key', privateFile, '--kid', 'ec-1'],
      {
        cwd: ROOT,
        env,
        encoding: 'utf8',
      },
    ).trim();
    expect(JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString())).toMatchObject({ alg: 'ES256', kid: 'ec-1' });
    expect((await v.api(token, 'GET', '/v1/admin/incidents')).status).toBe(200);
    // without --key there is nothing to sign with
    expect(() => execFileSync(process.execPath, [tsx, 'scripts/token.ts', '--user', 'pk-tool'], { cwd: ROOT, env, stdio: 'pipe' })).toThrow(
      /no JWT_SECRET is configured/,
    );
  });
});
