/**
 * Live location across replicas (real processes sharing one SQLite file and a real Redis):
 * a fix posted on one replica is in the SOS that another replica escalates (through the
 * latest-fix cache in Redis); with Redis stopped a replica stores each fix at once, so the
 * escalation still uses the newest (invariant 1: the store is the truth, Redis a cache);
 * with Redis back, fixes flow through the cache again. Throughout, the trail promise of
 * docs/location.md: a trail read on any of the three replicas ends with the same newest fix,
 * says whether it could read the cache (`fresh`), and a later read never shows less.
 *
 * r1 receives fixes and never flushes on its own (LOCATION_FLUSH_SECONDS is an hour), r3
 * flushes every second, r2 is the only one that sweeps (the others sweep once a year).
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mapLink } from '../../src/domain/messages.js';
import type { Cluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/vigil.js';
import { clusterCanRun, scenarios, suiteName, type Scenario } from './harness.js';

const reg = scenarios();
afterEach(() => reg.cleanup());

const M = 1 / 111_195; // a metre of latitude in degrees
const ARMED = { lat: 51.5007, lng: -0.1246 };
const R1 = 0;
const R2 = 1;
const R3 = 2;
const YEARLY = '0 0 0 1 1 *';

const env = (i: number): Record<string, string> => ({
  LOCATION_MIN_INTERVAL_SECONDS: '0',
  LOCATION_FLUSH_SECONDS: i === R3 ? '1' : '3600',
  // r1 and r3 serve the API only: no cron sweep and no wake-ups at the deadlines they see armed
  ...(i === R2 ? {} : { SWEEP_CRON: YEARLY, SWEEP_WAKE_UPS: 'off' }),
});

/** The SOS body texted for a timer, read from the shared store. */
function sosBody(dataDir: string, timerId: string): string | undefined {
  const db = new Database(join(dataDir, 'vigil.db'), { readonly: true, fileMustExist: true });
  try {
    const row = db
      .prepare("SELECT d.body FROM deliveries d JOIN incidents i ON i.id = d.incident_id WHERE i.timer_id = ? AND d.kind = 'sos' LIMIT 1")
      .get(timerId) as { body: string } | undefined;
    return row?.body;
  } finally {
    db.close();
  }
}

async function armOn(c: Cluster, i: number, user: string, seconds: number): Promise<{ token: string; timerId: string }> {
  const token = c.token(user, { name: user });
  expect((await c.api(i, token, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Kim', phone: '+14155550131' }] })).status).toBe(200);
  const t = await c.api(i, token, 'POST', '/v1/timers', { durationSeconds: seconds, location: ARMED });
  expect(t.status).toBe(201);
  return { token, timerId: String(t.body.timer.id) };
}

interface TrailAnswer {
  fixes: { lat: number; lng: number; at: string }[];
  fresh: boolean;
  maxLagSeconds?: number;
}

async function trailOn(c: Cluster, i: number, token: string, timerId: string): Promise<TrailAnswer> {
  const r = await c.api(i, token, 'GET', `/v1/timers/${timerId}/locations`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as TrailAnswer;
}

/**
 * The trail promise on three replicas: read r2, r3, then r1 (which holds buffered fixes), then
 * r2 and r3 again. Every answer ends with `newest` and has `fresh` as given; no later answer
 * shows less than an earlier one; after r1's read the three answer exactly alike.
 */
async function sameTrailEverywhere(c: Cluster, token: string, timerId: string, newest: { lat: number }, fresh: boolean) {
  const first = [await trailOn(c, R2, token, timerId), await trailOn(c, R3, token, timerId)];
  const r1 = await trailOn(c, R1, token, timerId);
  const again = [await trailOn(c, R2, token, timerId), await trailOn(c, R3, token, timerId)];
  for (const t of [...first, r1, ...again]) {
    expect(t.fixes.at(-1)).toMatchObject({ lat: newest.lat });
    expect(t.fresh).toBe(fresh);
    if (!fresh) expect(t.maxLagSeconds).toBeGreaterThan(0);
  }
  const ats = (t: TrailAnswer) => t.fixes.map((f) => f.at);
  for (const t of first) expect(ats(r1)).toEqual(expect.arrayContaining(ats(t)));
  for (const t of again) expect(t.fixes).toEqual(r1.fixes);
}

async function post(c: Cluster, i: number, token: string, timerId: string, p: { lat: number; lng: number }) {
  const r = await c.api(i, token, 'POST', `/v1/timers/${timerId}/location`, p);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { kept: boolean };
}

/** Wait for the SOS of `timerId` and return its body; it must have been escalated by r2. */
async function escalatedBody(s: Scenario, timerId: string): Promise<string> {
  const body = await eventually(async () => sosBody(s.dataDir, timerId), `the SOS of ${timerId}`, 30_000, 200);
  const escalatedBy = await eventually(
    async () =>
      Array.from({ length: s.cluster.size }, (_, i) => s.cluster.logs(i))
        .flat()
        .find((l) => l.msg === 'SOS escalated' && l.timer === timerId)?.replica,
    'the escalation log line',
  );
  expect(escalatedBy).toBe('r2');
  return body;
}

describe.skipIf(!clusterCanRun)(suiteName('cluster: live location across replicas, Redis stopped and restarted'), () => {
  it('a fix posted on r1 is in the SOS escalated by r2 and ends the trail read on every replica; Redis down → stored at once, still the newest everywhere; Redis back → fixes flow again', async () => {
    const s = await reg.start({ env });
    const c = s.cluster;

    // 1. through the cache: r1 never flushed this fix, r2 reads it from Redis
    const a = await armOn(c, R1, 'loc-ann', 10);
    const early = { lat: ARMED.lat + 400 * M, lng: ARMED.lng };
    const moved = { lat: ARMED.lat + 800 * M, lng: ARMED.lng };
    expect((await post(c, R1, a.token, a.timerId, early)).kept).toBe(true);
    expect((await post(c, R1, a.token, a.timerId, moved)).kept).toBe(true);
    expect(await s.redisGet(`vigil:fix:${a.timerId}`)).toContain(String(moved.lat));
    // `early` is only in r1's buffer: r2 and r3 end with `moved` (the cache) and miss it until r1's read stores it
    await sameTrailEverywhere(c, a.token, a.timerId, moved, true);
    const bodyA = await escalatedBody(s, a.timerId);
    expect(bodyA).toContain(`at ${mapLink(moved)}`);
    expect(bodyA).toMatch(/Last seen (just now|\d+ min ago) at /);
    expect(bodyA).not.toContain(mapLink(ARMED));

    // 2. Redis stopped: a fix the cache does not take is stored at once, so it is still the newest everywhere
    const b = await armOn(c, R1, 'loc-ben', 20);
    const flushed = { lat: ARMED.lat + 1500 * M, lng: ARMED.lng };
    expect((await post(c, R3, b.token, b.timerId, flushed)).kept).toBe(true);
    await eventually(async () => {
      const db = new Database(join(s.dataDir, 'vigil.db'), { readonly: true });
      try {
        return db.prepare('SELECT 1 FROM location_fixes WHERE timer_id = ?').get(b.timerId) !== undefined;
      } finally {
        db.close();
      }
    }, 'r3 flushing the fix to the store');
    await s.redis.stop();
    const newest = { lat: ARMED.lat + 3000 * M, lng: ARMED.lng };
    // posting still works without Redis; r1 (which never flushes on its own) stores the fix at once
    expect((await post(c, R1, b.token, b.timerId, newest)).kept).toBe(true);
    await sameTrailEverywhere(c, b.token, b.timerId, newest, false);
    const bodyB = await escalatedBody(s, b.timerId);
    expect(bodyB).toContain(`at ${mapLink(newest)}`);
    expect(bodyB).not.toContain(mapLink(flushed));

    // 3. Redis back: fixes reach the other replicas through the cache again
    await s.redis.start();
    const d = await armOn(c, R1, 'loc-dot', 25);
    let n = 0;
    let latest = { lat: ARMED.lat, lng: ARMED.lng };
    const withReplicaLogs = (err: unknown) => {
      // a replica that stopped answering: say why (its stderr and last log lines)
      throw new Error(
        `${String(err)}\n--- r1 stderr ---\n${c.stderr(R1).slice(-4000)}\n--- r1 log ---\n${JSON.stringify(c.logs(R1).slice(-20))}`,
      );
    };
    await eventually(
      async () => {
        const next = { lat: ARMED.lat + (200 + 50 * ++n) * M, lng: ARMED.lng };
        await post(c, R1, d.token, d.timerId, next);
        latest = next; // only once kept (a refused post throws and the loop tries again)
        return (await s.redisGet(`vigil:fix:${d.timerId}`))?.includes(String(latest.lat));
      },
      'a fix in Redis again after the restart',
      20_000,
      500,
    ).catch(withReplicaLogs);
    // a replica whose Redis client has not reconnected yet says so (`fresh: false`) rather than
    // answering a stale trail as current: wait for the promised condition on every replica
    for (const i of [R1, R2, R3])
      await eventually(async () => (await trailOn(c, i, d.token, d.timerId)).fresh, `r${i + 1} reading the cache again`, 20_000, 200);
    await sameTrailEverywhere(c, d.token, d.timerId, latest, true);
    const bodyD = await escalatedBody(s, d.timerId);
    expect(bodyD).toContain(`at ${mapLink(latest)}`);
  }, 180_000);
});
