/** Tokens: exp required, a maximum lifetime, iss/aud when configured; sockets end with their token and are capped per person. */
import jwt from 'jsonwebtoken';
import { io } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signToken, verifyToken } from '../../src/auth/tokens.js';
import { connect } from '../helpers/sockets.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';

const DAY = 86400;
let v: TestVigil;
let secret: string;

beforeAll(async () => {
  v = await startTestVigil({ JWT_MAX_LIFETIME_SECONDS: String(7 * DAY), SOCKETS_PER_USER: '2' }, { manualTicks: true });
  secret = v.vigil.config.jwtSecret ?? '';
});
afterAll(async () => {
  await v?.stop();
});

const now = () => Math.floor(Date.now() / 1000);
const craft = (claims: Record<string, unknown>) => jwt.sign(claims, secret, { algorithm: 'HS256' });
const get = (token: string) => v.api(token, 'GET', '/v1/timers');

describe('REST', () => {
  it('refuses a token without exp', async () => {
    const r = await get(craft({ sub: 'no-exp', iat: now() }));
    expect(r.status).toBe(401);
    expect(r.body.error.message).toMatch(/exp/);
  });

  it('refuses a token that lives longer than JWT_MAX_LIFETIME_SECONDS (exp − iat, or exp − now without iat)', async () => {
    expect((await get(craft({ sub: 'ten-years', iat: now(), exp: now() + 3650 * DAY }))).status).toBe(401);
    expect((await get(craft({ sub: 'eight-days', exp: now() + 8 * DAY }))).status).toBe(401);
    expect((await get(craft({ sub: 'six-days', iat: now(), exp: now() + 6 * DAY }))).status).toBe(200);
    expect((await get(craft({ sub: 'six-days-no-iat', exp: now() + 6 * DAY }))).status).toBe(200);
  });

  it('refuses an expired token', async () => {
    const r = await get(craft({ sub: 'old', iat: now() - 100, exp: now() - 10 }));
    expect(r.status).toBe(401);
    expect(r.body.error.message).toMatch(/expired/);
  });

  it('checks iss and aud when configured, and only then', () => {
    const policy = { maxLifetimeSeconds: DAY, issuer: 'https://id.example', audience: 'vigil' };
    const good = signToken(secret, { sub: 'a' }, 3600, { issuer: 'https://id.example', audience: 'vigil' });
    expect(verifyToken(secret, good, policy).userId).toBe('a');
    expect(() =>
      verifyToken(secret, signToken(secret, { sub: 'a' }, 3600, { issuer: 'https://evil.example', audience: 'vigil' }), policy),
    ).toThrow(/issuer/);
    expect(() =>
      verifyToken(secret, signToken(secret, { sub: 'a' }, 3600, { issuer: 'https://id.example', audience: 'other' }), policy),
    ).toThrow(/audience/);
    expect(() => verifyToken(secret, signToken(secret, { sub: 'a' }, 3600), policy)).toThrow();
    expect(verifyToken(secret, good, { maxLifetimeSeconds: DAY }).userId).toBe('a');
  });
});

describe('Socket.IO', () => {
  it('refuses a socket whose token has no exp', async () => {
    await expect(connect(v.url, craft({ sub: 'sock-no-exp' }))).rejects.toThrow(/exp/);
  });

  it('disconnects a socket when its token expires', async () => {
    const rec = await connect(v.url, craft({ sub: 'sock-short', iat: now(), exp: now() + 2 }));
    const disconnected = new Promise<string>((resolve) => rec.socket.once('disconnect', (reason) => resolve(reason)));
    expect(await disconnected).toBe('io server disconnect');
    expect(rec.named('token.expired')).toHaveLength(1);
  });

  it('caps the sockets one person holds open (SOCKETS_PER_USER), and frees the slot on disconnect', async () => {
    const t = v.token('sock-many');
    const a = await connect(v.url, t);
    const b = await connect(v.url, t);
    try {
      await expect(connect(v.url, t)).rejects.toThrow(/too many connections/);
      // another person is not affected
      const other = await connect(v.url, v.token('sock-other'));
      other.close();
      a.close();
      await eventually(async () => {
        const s = io(v.url, { auth: { token: t }, transports: ['websocket'], reconnection: false, forceNew: true });
        const ok = await new Promise<boolean>((resolve) => {
          s.once('ready', () => resolve(true));
          s.once('connect_error', () => resolve(false));
        });
        s.close();
        return ok;
      }, 'a slot to free up');
    } finally {
      a.close();
      b.close();
    }
  });
});
