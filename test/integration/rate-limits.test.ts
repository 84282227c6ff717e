/**
 * Request budgets: per person, check-ins on their own budget, per address without a token;
 * 429 `rate_limited` with Retry-After; a refused request writes nothing and reads no body;
 * in cluster mode the counters are shared through Redis (Socket.IO handshakes' too) and fall back to each
 * replica's memory when it is down.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { plainRequest, pollingHandshake } from '../helpers/engine-raw.js';
import { redisAvailable, REDIS_MISSING, startRedis, type RedisServer } from '../helpers/redis-server.js';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';

const LIMITS = {
  RATE_LIMIT_PER_PERSON: '8',
  RATE_LIMIT_CHECKINS_PER_PERSON: '4',
  RATE_LIMIT_PER_IP: '6',
  RATE_LIMIT_WINDOW_MS: '60000',
  RATE_LIMIT_HOLD_MS: '0',
};
let n = 0;
const user = () => `rl-${++n}-${Math.random().toString(36).slice(2, 8)}`;

async function expectRefused(r: { status: number; body: unknown; headers: Record<string, string> }, budget: string) {
  expect(r.status).toBe(429);
  expect(r.body).toEqual({ error: { code: 'rate_limited', message: expect.any(String), details: { budget } } });
  expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
}

describe('request budgets (embedded, in memory)', () => {
  let v: TestVigil;
  beforeAll(async () => {
    v = await startTestVigil({ ...LIMITS, TRUST_PROXY: 'false' }, { manualTicks: true });
  });
  afterAll(async () => {
    await v?.stop();
  });

  it("refuses a person over their budget with 429 rate_limited and Retry-After; another person's budget is untouched", async () => {
    const t = v.token(user());
    for (let i = 0; i < 8; i++) expect((await v.api(t, 'GET', '/v1/timers')).status).toBe(200);
    await expectRefused(await v.api(t, 'GET', '/v1/timers'), 'person');
    expect((await v.api(v.token(user()), 'GET', '/v1/timers')).status).toBe(200);
  });

  it("invariant 8: check-ins have their own budget, which a person's flood of other routes never spends", async () => {
    const t = v.token(user());
    const armed = await v.api(t, 'POST', '/v1/timers', { durationSeconds: 600 });
    expect(armed.status).toBe(201);
    while ((await v.api(t, 'GET', '/v1/timers')).status !== 429);
    // the person budget is spent; the check-in still goes through (in any spelling of the path)
    const safe = await v.api(t, 'POST', `/V1/Timers/${armed.body.timer.id}/SAFE`);
    expect(safe.status).toBe(200);
    expect(safe.body.timer.status).toBe('safe');
  });

  it('counts check-ins on their own budget too, and the refusal names it', async () => {
    const t = v.token(user());
    const r = [];
    for (let i = 0; i < 5; i++) r.push(await v.api(t, 'POST', '/v1/timers/tmr_doesnotexist/cancel'));
    expect(r.slice(0, 4).map((x) => x.status)).toEqual([404, 404, 404, 404]);
    await expectRefused(r[4]!, 'checkin');
  });

  it('a refused request writes nothing and its body is never read', async () => {
    const who = user();
    const t = v.token(who);
    while ((await v.api(t, 'GET', '/v1/timers')).status !== 429);
    const before = await v.vigil.store.listTimers(who);
    await expectRefused(await v.api(t, 'POST', '/v1/timers', { durationSeconds: 600 }), 'person');
    // not 400 malformed_json: the budget is checked before the body is parsed
    await expectRefused(await v.api(t, 'POST', '/v1/timers', '{"durationSeconds":'), 'person');
    await expectRefused(await v.api(t, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'A', phone: '+14155550100' }] }), 'person');
    const after = await v.vigil.store.listTimers(who);
    expect(after).toEqual(before);
    expect(await v.vigil.store.getContacts(who)).toEqual([]);
  });

  it('limits requests without a valid token per address; a forged X-Forwarded-For does not escape it', async () => {
    const codes: number[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await fetch(`${v.url}/v1/timers`, { headers: { 'x-forwarded-for': `203.0.113.${i}` } });
      codes.push(res.status);
      if (res.status === 429) {
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(await res.json()).toMatchObject({ error: { code: 'rate_limited', details: { budget: 'ip' } } });
      } else await res.arrayBuffer();
    }
    expect(codes.filter((c) => c === 401)).toHaveLength(6);
    expect(codes.slice(6)).toEqual([429, 429]);
    // a person with a valid token is counted on their own budget, not the address's
    expect((await v.api(v.token(user()), 'GET', '/v1/timers')).status).toBe(200);
  });

  it('health and metrics are never limited', async () => {
    for (let i = 0; i < 10; i++) expect((await fetch(`${v.url}/livez`)).status).toBe(200);
  });
});

describe('held refusals', () => {
  let v: TestVigil;
  afterEach(async () => {
    await v?.stop();
  });

  it('holds a refusal, then answers it 429 (and answers at once beyond RATE_LIMIT_MAX_HELD)', async () => {
    v = await startTestVigil({ ...LIMITS, RATE_LIMIT_HOLD_MS: '200', RATE_LIMIT_MAX_HELD: '1' }, { manualTicks: true });
    const t = v.token(user());
    for (let i = 0; i < 8; i++) await v.api(t, 'GET', '/v1/timers');
    const answers = await Promise.all([0, 1, 2].map(() => v.api(t, 'GET', '/v1/timers')));
    for (const a of answers) await expectRefused(a, 'person');
  });
});

describe.skipIf(!redisAvailable())(`shared budgets in cluster mode (Redis)${redisAvailable() ? '' : ` — ${REDIS_MISSING}`}`, () => {
  let redis: RedisServer;
  let a: TestVigil;
  let b: TestVigil;
  beforeAll(async () => {
    redis = await startRedis();
    const env = {
      ...LIMITS,
      REDIS_URL: redis.url,
      JWT_SECRET: randomBytes(32).toString('hex'),
      CONTACT_ID_KEY: randomBytes(32).toString('hex'),
      RATE_LIMIT_REDIS_TIMEOUT_MS: '500',
    };
    a = await startTestVigil(env, { manualTicks: true });
    b = await startTestVigil(env, { manualTicks: true });
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await redis?.stop();
  });

  it('two replicas share one budget per person', async () => {
    const t = a.token(user());
    for (let i = 0; i < 4; i++) {
      expect((await a.api(t, 'GET', '/v1/timers')).status).toBe(200);
      expect((await b.api(t, 'GET', '/v1/timers')).status).toBe(200);
    }
    await expectRefused(await a.api(t, 'GET', '/v1/timers'), 'person');
    await expectRefused(await b.api(t, 'GET', '/v1/timers'), 'person');
  });

  it('Socket.IO handshakes spend the address budget shared by the replicas, with the requests without a token', async () => {
    const answers: number[] = [];
    for (let i = 0; i < 3; i++) {
      answers.push((await pollingHandshake(a.vigil.port)).status);
      answers.push((await pollingHandshake(b.vigil.port)).status);
    }
    expect(answers).toEqual([200, 200, 200, 200, 200, 200]);
    expect((await pollingHandshake(a.vigil.port)).status).toBe(429);
    expect((await pollingHandshake(b.vigil.port)).status).toBe(429);
    expect((await plainRequest(b.vigil.port, 'GET', '/openapi.json')).status).toBe(429);
  });

  it('invariant 8: with Redis stopped, check-ins count on each replica (never refused for the outage, never unlimited); the other budgets too', async () => {
    const who = user();
    const t = a.token(who);
    const armed = await a.api(t, 'POST', '/v1/timers', { durationSeconds: 600 });
    expect(armed.status).toBe(201);
    await redis.stop();
    try {
      // a budget of four check-ins a window, counted afresh on this replica: four answered, then refused
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await a.api(t, 'POST', `/v1/timers/${armed.body.timer.id}/safe`)).status);
      expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
      expect(statuses.slice(4)).toEqual([429, 429]);
      // the other replica's memory is its own: the person's check-in there passes the budget
      // (these test replicas keep separate stores, so b answers 404 for a's timer, not 429)
      expect((await b.api(t, 'POST', `/v1/timers/${armed.body.timer.id}/safe`)).status).toBe(404);
      // the person budget falls back to this replica's memory: it still limits
      const other = a.token(user());
      const codes: number[] = [];
      for (let i = 0; i < 10; i++) codes.push((await a.api(other, 'GET', '/v1/timers')).status);
      expect(codes.slice(0, 8).every((c) => c === 200)).toBe(true);
      expect(codes.slice(8)).toEqual([429, 429]);
    } finally {
      await redis.start();
    }
  });
});
