/**
 * What a token may do, and for how long (docs/security.md, "Revocation"), against a real
 * in-process Vigil with real socket.io-client sockets:
 * - a person revokes their own tokens, a moderator anyone's (audited): REST answers 401
 *   `token_revoked`, the person's sockets are cut off at once, a token issued later works;
 * - a socket whose person's tokens were revoked where no disconnect reached it (another
 *   replica whose command was lost) is cut off within SOCKET_TOKEN_RECHECK_MS: a moderator
 *   no longer keeps the SOS and location stream for the token's whole life;
 * - a revoked token opens no socket, even while this replica's REST cache (the staleness
 *   bound, TOKEN_REVOCATION_CACHE_MS) still holds the answer from before;
 * - an `iat` in the future is refused (`token_issued_in_future`): it would make `exp − iat`
 *   look short while the token lives for years;
 * - the token's `name` is made plain like every display name.
 * With Redis: a revocation on one replica cuts the person's sockets on another at once.
 */
import { randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { io } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisAvailable, REDIS_MISSING, startRedis, type RedisServer } from '../helpers/redis-server.js';
import { openSockets, type Recorder } from '../helpers/sockets.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';

let n = 0;
const person = (tag: string) => `tok-${tag}-${++n}-${randomBytes(3).toString('hex')}`;

/** A token with the claims given (HS256 with the service's secret); `iat`/`exp` in seconds. */
function rawToken(v: TestVigil, claims: { sub: string; iat: number; exp: number; role?: string; name?: string }): string {
  return jwt.sign(claims, v.vigil.config.jwtSecret ?? '', { algorithm: 'HS256' });
}

/** A token issued strictly after `stamp` (whole seconds, as `iat` is): the next second. */
function tokenAfter(v: TestVigil, sub: string, stamp: string, admin = false): string {
  const iat = Math.floor(Date.parse(stamp) / 1000) + 1;
  return rawToken(v, { sub, iat, exp: iat + 3600, ...(admin ? { role: 'admin' } : {}) });
}

/** The handshake's refusal (the socket must not connect). */
async function refusal(url: string, token: string): Promise<{ message: string; code?: string }> {
  const s = io(url, { auth: { token }, transports: ['websocket'], reconnection: false, forceNew: true });
  try {
    return await new Promise((resolve, reject) => {
      s.once('connect', () => reject(new Error('the socket connected')));
      s.once('connect_error', (err: Error & { data?: { code?: string } }) => resolve({ message: err.message, code: err.data?.code }));
    });
  } finally {
    s.close();
  }
}

const cutOff = (r: Recorder, what: string, timeoutMs = 5_000) => eventually(async () => !r.socket.connected, what, timeoutMs, 20);

describe('token revocation and checks (one replica)', () => {
  let v: TestVigil;
  const sockets = openSockets();
  beforeAll(async () => {
    // the recheck is long here, so a socket cut off is the revocation's own doing; the REST cache
    // is long so the handshake is seen to read the store itself
    v = await startTestVigil({ SOCKET_TOKEN_RECHECK_MS: '600000', TOKEN_REVOCATION_CACHE_MS: '60000' });
  });
  afterAll(async () => {
    sockets.closeAll();
    await v?.stop();
  });
  const sock = (token: string) => sockets.connect(v.url, token);

  it('a person revokes their own tokens (a lost phone): REST answers 401 token_revoked, their sockets are cut off at once, a token issued after works', async () => {
    const ann = person('ann');
    const old = v.token(ann);
    expect((await v.api(old, 'GET', '/v1/timers')).status).toBe(200);
    const phone = await sock(old);
    const other = await sock(v.token(person('bystander')));

    const r = await v.api(old, 'POST', '/v1/me/tokens/revoke');
    expect(r.status).toBe(200);
    expect(r.body.userId).toBe(ann);
    await cutOff(phone, "the revoked person's socket to be cut off");

    const refused = await v.api(old, 'GET', '/v1/timers');
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('token_revoked');
    expect(await refusal(v.url, old)).toMatchObject({ code: 'token_revoked' });
    // someone else keeps theirs
    expect(other.socket.connected).toBe(true);

    const fresh = tokenAfter(v, ann, r.body.revokedBefore as string);
    expect((await v.api(fresh, 'GET', '/v1/timers')).status).toBe(200);
    expect((await sock(fresh)).socket.connected).toBe(true);
  });

  it("a moderator revokes a person's tokens: audited (user.revoke_tokens), the person's REST and sockets refused at once; a person may not", async () => {
    const bob = person('bob');
    const mod = person('mod');
    const bobToken = v.token(bob);
    const bobSocket = await sock(bobToken);
    const modToken = v.token(mod, { admin: true });

    const forbidden = await v.api(v.token(person('eve')), 'POST', `/v1/admin/users/${bob}/revoke-tokens`);
    expect(forbidden.status).toBe(403);
    expect(bobSocket.socket.connected).toBe(true);

    const r = await v.api(modToken, 'POST', `/v1/admin/users/${bob}/revoke-tokens`);
    expect(r.status).toBe(200);
    await cutOff(bobSocket, "bob's socket to be cut off");
    expect((await v.api(bobToken, 'GET', '/v1/timers')).body.error.code).toBe('token_revoked');

    const audit = await v.api(modToken, 'GET', '/v1/admin/audit');
    const line = (audit.body.audit as { action: string; target: string; actor: string; incidentId?: string }[]).find(
      (l) => l.target === bob,
    );
    expect(line).toMatchObject({ action: 'user.revoke_tokens', actor: mod });
    expect(line?.incidentId).toBeUndefined();
    // the moderator's own tokens are untouched
    expect((await v.api(modToken, 'GET', '/v1/admin/audit')).status).toBe(200);
  });

  it("a revoked token opens no socket even while this replica's REST cache still answers from before the revocation", async () => {
    const cat = person('cat');
    const token = v.token(cat);
    // read (and cached) before the stamp moves
    expect((await v.api(token, 'GET', '/v1/timers')).status).toBe(200);
    await v.vigil.store.revokeTokens(cat);
    // REST: within TOKEN_REVOCATION_CACHE_MS of the read, the documented staleness bound
    expect((await v.api(token, 'GET', '/v1/timers')).status).toBe(200);
    // a handshake reads the stamp from the store
    expect(await refusal(v.url, token)).toMatchObject({ code: 'token_revoked' });
  });

  it('a token whose iat is in the future (beyond the clock skew) is refused on REST and sockets: token_issued_in_future', async () => {
    const now = Math.floor(Date.now() / 1000);
    // a year ahead, living "10 minutes" by exp − iat: a token good for a year
    const forged = rawToken(v, { sub: person('future'), iat: now + 365 * 24 * 3600, exp: now + 365 * 24 * 3600 + 600 });
    const r = await v.api(forged, 'GET', '/v1/timers');
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('token_issued_in_future');
    expect(await refusal(v.url, forged)).toMatchObject({ code: 'token_issued_in_future' });
    // an issuer clock a little ahead is tolerated
    const skewed = rawToken(v, { sub: person('skew'), iat: now + 20, exp: now + 3600 });
    expect((await v.api(skewed, 'GET', '/v1/timers')).status).toBe(200);
  });

  it("the token's name is made plain like any display name: no bidi or control characters, no link", async () => {
    const dee = person('dee');
    const name = '\u202eDee\u0007 Evil www.evil-bank.com\u200b';
    const r = await v.api(v.token(dee, { name }), 'POST', '/v1/sos', {});
    expect(r.status).toBe(201);
    const shown = r.body.incident.displayName as string;
    for (const c of ['\u202e', '\u0007', '\u200b']) expect(shown).not.toContain(c);
    expect(shown).not.toMatch(/www\.|evil-bank\.com/);
    expect(shown).toMatch(/Dee/);
    expect(shown).toMatch(/evil-bank\[\.\]com/);
    // and the moderators' copy is the same plain name
    const modToken = v.token(person('mod'), { admin: true });
    const seen = await v.api(modToken, 'GET', `/v1/admin/incidents/${r.body.incident.id as string}`);
    expect(seen.body.incident.displayName).toBe(shown);
  });
});

describe('the periodic recheck of open sockets', () => {
  let v: TestVigil;
  const sockets = openSockets();
  beforeAll(async () => {
    v = await startTestVigil({ SOCKET_TOKEN_RECHECK_MS: '1000' });
  });
  afterAll(async () => {
    sockets.closeAll();
    await v?.stop();
  });
  const sock = (token: string) => sockets.connect(v.url, token);

  it("a moderator's socket is cut off within SOCKET_TOKEN_RECHECK_MS (token.revoked) when the stamp moved where no disconnect reached it", async () => {
    const mod = person('mod');
    const modSocket = await sock(v.token(mod, { admin: true }));
    // another replica moved the stamp and its disconnect command was lost: only the recheck is left
    await v.vigil.store.revokeTokens(mod, 'mod-root');
    const told = await eventually(async () => modSocket.named('token.revoked')[0], 'token.revoked at the socket', 10_000, 20);
    expect(told.message).toMatch(/revoked/);
    await cutOff(modSocket, "the moderator's socket to be cut off by the recheck");
  });
});

describe.skipIf(!redisAvailable())(`token revocation across replicas${redisAvailable() ? '' : ` — ${REDIS_MISSING}`}`, () => {
  let redis: RedisServer;
  let a: TestVigil, b: TestVigil;
  const sockets = openSockets();
  beforeAll(async () => {
    redis = await startRedis();
    // one store (the SQLite file), one Redis; the recheck is long: only the disconnect command can be quick
    const env = {
      REDIS_URL: redis.url,
      JWT_SECRET: randomBytes(32).toString('hex'),
      CONTACT_ID_KEY: randomBytes(32).toString('hex'),
      SOCKET_TOKEN_RECHECK_MS: '600000',
      TOKEN_REVOCATION_CACHE_MS: '500',
    };
    a = await startTestVigil(env, { manualTicks: true });
    b = await startTestVigil(env, { manualTicks: true }, a.dataDir);
  }, 60_000);
  afterAll(async () => {
    sockets.closeAll();
    await b?.stop({ keepData: true });
    await a?.stop();
    await redis?.stop();
  });

  it("a revocation on one replica cuts the person's sockets on another at once; its REST refuses the token within TOKEN_REVOCATION_CACHE_MS", async () => {
    const ann = person('ann');
    const token = a.token(ann);
    expect((await b.api(token, 'GET', '/v1/timers')).status).toBe(200);
    const onB = await sockets.connect(b.url, token);
    expect((await a.api(token, 'POST', '/v1/me/tokens/revoke')).status).toBe(200);
    await cutOff(onB, 'the socket on the other replica to be cut off');
    await eventually(async () => (await b.api(token, 'GET', '/v1/timers')).status === 401, 'the other replica to refuse the token');
    expect(await refusal(b.url, token)).toMatchObject({ code: 'token_revoked' });
  });
});
