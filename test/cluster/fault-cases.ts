/**
 * Cluster faults with real processes, store-agnostic: the lock
 * holder killed mid-sweep, paused past its lease, Redis stopped mid-run, and two
 * replicas forced to sweep at once. After each: exactly one incident per timer and one
 * delivery per contact (invariant 3, docs/invariants.md), nothing lost (invariant 4). Timers are
 * seeded straight into the store (cluster-store.ts) so thousands come due at once;
 * arming over REST is covered by cluster-cases.ts. Each case is a function that declares
 * its `it` inside the caller's describe; the test files choose the store.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import type { Cluster } from '../helpers/cluster.js';
import type { Progress, Tally } from '../helpers/cluster-store.js';
import { eventually } from '../helpers/vigil.js';
import { KEPT_LEASE_LOST } from '../../src/worker/sweep-lease.js';
import {
  allSweeps,
  at,
  budget,
  FLOOR_MS,
  itWithConcurrentCas,
  linesWith,
  overlaps,
  pollEvery,
  sized,
  smsPerKey,
  sweepsLogged,
  workWindows,
  type Scenario,
  type ScenarioRegistry,
} from './harness.js';

const LOCK_KEY = 'vigil:lock:{vigil:sweep}';

/** Per-item allowances of the waits below, with their floors (see `budget`). */
const PER_TIMER_MS = 40;
const PER_LOG_KEY_MS = 10;
/** a case's own limit: above the sum of its budgets, so a stuck wait fails with its own message */
const CASE_TIMEOUT_MS = 300_000;

/** Wait until every timer is escalated and every SOS delivery is sent; then check exactly-once. */
async function settled(s: Scenario, timers: number, contacts: number, timeoutMs = budget(timers, PER_TIMER_MS, 60_000)): Promise<Tally> {
  const { cluster: c, store } = s;
  let last: Progress | undefined;
  await eventually(
    async () => {
      const asked = Date.now();
      last = await store.progress().catch((err: unknown) => {
        // a poll the server did not answer (the test client's socket timeout) is retried, and said
        console.warn(`progress query failed after ${Date.now() - asked} ms, polling again: ${String(err)}`);
        throw err;
      });
      return last.done === timers && last.pending === 0 && last.sent === contacts;
    },
    `${timers} timers escalated and ${contacts} SMS sent`,
    timeoutMs,
    pollEvery(s.backend, 100),
  ).catch((err: unknown) => {
    const now = Date.now();
    const quiet = Array.from({ length: c.size }, (_, i) => {
      const lines = c.logs(i);
      const lastAt = lines.length ? at(lines[lines.length - 1]!) : NaN;
      return `${c.id(i)} ${c.running(i) ? 'running' : 'stopped'}, last line ${now - lastAt} ms ago`;
    });
    throw new Error(
      `${String(err)}; last progress ${JSON.stringify(last)}; SMS keys in the logs ${smsPerKey(c).size}; ${quiet.join('; ')}`,
      { cause: err },
    );
  });
  const t = await store.tally();
  expect(t).toMatchObject({
    timers,
    expired: timers,
    live: 0,
    done: timers,
    pending: 0,
    incidents: timers,
    incidentTimers: timers,
    strayDeliveries: 0,
    fenceMismatches: 0,
  });
  expect(t).toMatchObject({ expectedDeliveries: contacts, deliveries: contacts, deliveryPairs: contacts, sent: contacts });
  // the logs trail the store: wait for every SMS line and every sweep line before reading them
  await eventually(
    async () => smsPerKey(c).size === contacts,
    `${contacts} delivery keys in the carrier logs`,
    budget(contacts, PER_LOG_KEY_MS, FLOOR_MS),
  );
  await eventually(async () => sweepsLogged(c), 'the sweep lines of every sweep that did work', FLOOR_MS);
  return t;
}

/** The replica holding the sweep lock now, from the token in Redis (`<REPLICA_ID>:<uuid>`). */
async function holder(c: Cluster, get: (k: string) => Promise<string | null>, key = LOCK_KEY): Promise<number | undefined> {
  const token = await get(key);
  if (!token) return undefined;
  const i = c.indexOf(token.slice(0, token.indexOf(':')));
  return i >= 0 ? i : undefined;
}

/**
 * Seed due timers, then wait until a sweep is well under way; answers the holder and its fence.
 * Progress is read from the replicas' 'SOS escalated' lines (logged after each batch commits),
 * not from the store: a store poll on FerretDB is throttled to one a second (minPollMs), in which
 * a whole sweep of 60 timers could pass unseen ('expected 55 to be less than 48').
 */
async function midSweep(s: Scenario, count: number) {
  const seeded = await s.store.seedTimers({ count, expiresAt: Date.now() + 500 });
  const ids = new Set(seeded.timerIds);
  return eventually(
    async () => {
      const progress = linesWith(s.cluster, 'SOS escalated').filter((l) => ids.has(String(l.timer))).length;
      if (progress < count * 0.1) return undefined;
      const h = await holder(s.cluster, s.redisGet);
      const fence = Number(await s.redisGet(`${LOCK_KEY}:fence`));
      return h === undefined ? undefined : { ...seeded, holder: h, fence, progress };
    },
    'a sweep under way',
    budget(count, PER_TIMER_MS / 2, FLOOR_MS),
    20,
  );
}

/** Scenario 2: kill -9 of the lock holder mid-sweep. */
export function killHolder(reg: ScenarioRegistry): void {
  it(
    'kill -9 of the lock holder mid-sweep: the others take over after the lease and escalate everything once',
    { timeout: CASE_TIMEOUT_MS },
    async () => {
      const TTL = 3000;
      // on a scanning server a batch of 50 would outlast a third of the TTL (the lease is extended between batches)
      const batch = sized(reg.backend, 50, 5);
      const s = await reg.start({
        env: { SWEEP_BATCH_SIZE: String(batch), SWEEP_CONCURRENCY: '1', LOCK_TTL_MS: String(TTL), DELIVERY_LEASE_MS: '2000' },
      });
      const c = s.cluster;
      const N = sized(reg.backend, 1500, 60);
      const { holder: h, fence, progress, timerIds, contacts } = await midSweep(s, N);
      expect(progress).toBeLessThan(N * 0.8); // really in the middle of it
      const killedAt = Date.now();
      await c.kill(h, 'SIGKILL');
      const atKill = await s.store.tally();

      const final = await settled(s, N, contacts);
      expect(timerIds).toHaveLength(N);

      const others = linesWith(c, 'SOS escalated').filter((l) => l.replica !== c.id(h) && at(l) >= killedAt);
      const takeover = Math.min(...others.map(at)) - killedAt;
      const last = final.lastEscalatedAt - killedAt;
      const carriers = [...smsPerKey(c).values()];
      console.log(
        `[kill -9 ${reg.backend.name}] ${N} timers, batches of ${batch}; ${c.id(h)} (fence ${fence}) killed with ${atKill.incidents}/${N} incidents open and ${atKill.pending} escalations pending; ` +
          `first escalation by another replica ${takeover} ms after the kill, last one ${last} ms after ` +
          `(lock TTL ${TTL} ms + 2 ticks = ${TTL + 2000} ms); ${carriers.filter((n) => n > 1).length} SMS handed to the carrier twice with the same idempotency key`,
      );
      // liveness: another replica takes over within the lease plus two ticks (with slack for a
      // loaded 2-core machine); the rest of the backlog then takes as long as sweeping it takes
      expect(takeover).toBeLessThan(TTL + 2000 + 3000);
      expect(last).toBeLessThan(TTL + 60_000);
      expect(smsPerKey(c).size).toBe(contacts);
      // the taker's claims carry a higher fence (the killed sweep's pending claims keep its own)
      expect(await s.store.incidentsAboveFence(fence)).toBeGreaterThan(0);
    },
  );
}

/**
 * Sweep shards: with SWEEP_SHARDS=3 the replicas escalate one burst together, each its own
 * shard under its own lock (first burst: their sweeps' windows of work overlap; with one lock
 * for every shard they never do). Then kill -9 of a replica while it sweeps a shard of a
 * second burst: the others finish that shard once its lease lapses; everything once.
 */
export function killShardHolder(reg: ScenarioRegistry): void {
  it(
    'sweep shards (SWEEP_SHARDS=3): replicas escalate one burst at the same time; kill -9 of one mid-sweep, the others finish its shard; everything once',
    { timeout: CASE_TIMEOUT_MS },
    async () => {
      const TTL = 3000;
      // small claims: many short transactions, so a burst lasts long enough for a poll to see a shard's holder at work
      const batch = 5;
      const s = await reg.start({
        env: {
          SWEEP_SHARDS: '3',
          SWEEP_BATCH_SIZE: String(batch),
          SWEEP_CONCURRENCY: '1',
          LOCK_TTL_MS: String(TTL),
          DELIVERY_LEASE_MS: '2000',
        },
      });
      const c = s.cluster;

      // 1. one burst, nobody killed: the replicas' sweeps escalate it at the same time
      const N = sized(reg.backend, 6000, 60);
      const first = await s.store.seedTimers({ count: N, expiresAt: Date.now() + 500 });
      await settled(s, N, first.contacts);
      const concurrent = overlaps(workWindows(c)).filter((o) => o.ms > 0);
      const byReplica: Record<string, number> = {};
      for (const x of allSweeps(c)) if (x.claimed > 0) byReplica[x.replica] = (byReplica[x.replica] ?? 0) + x.claimed;
      console.log(
        `[sweep shards ${reg.backend.name}] ${N} timers claimed by replica ${JSON.stringify(byReplica)}; ${concurrent.length} pairs of sweeps escalating at the same time, ` +
          `the longest overlap ${Math.max(0, ...concurrent.map((o) => o.ms))} ms`,
      );
      expect(Object.keys(byReplica).length).toBeGreaterThanOrEqual(2);
      expect(concurrent.length).toBeGreaterThan(0);

      // 2. another burst; kill -9 of a replica seen holding a shard's lock (live, in Redis: the log
      // lines trail by as much as a burst takes) while the store says the burst is not over. A burst
      // that went by between two polls (a loaded machine) is followed by another, at most three.
      const M = sized(reg.backend, 3000, 150);
      const shardKeys = [LOCK_KEY, 'vigil:lock:{vigil:sweep:1}', 'vigil:lock:{vigil:sweep:2}'];
      let total = N;
      let contacts = first.contacts;
      let victim: number | undefined;
      for (let attempt = 1; victim === undefined; attempt++) {
        if (attempt > 3) throw new Error('three bursts went by without a poll seeing a replica at work on one');
        const dueAt = Date.now() + 1500;
        const burst = await s.store.seedTimers({ count: M, expiresAt: dueAt, prefix: `burst${attempt}-` });
        total += M;
        contacts += burst.contacts;
        await eventually(async () => Date.now() >= dueAt, 'the burst due', FLOOR_MS, 5);
        const giveUp = Date.now() + budget(M, PER_TIMER_MS, FLOOR_MS);
        while (victim === undefined && Date.now() < giveUp) {
          const h = (await Promise.all(shardKeys.map((key) => holder(c, s.redisGet, key)))).find((x) => x !== undefined);
          if (h !== undefined) {
            if ((await s.store.progress()).done >= total) break; // this burst is over: the next one
            victim = h;
          } else await sleep(5);
        }
      }
      const killedAt = Date.now();
      await c.kill(victim, 'SIGKILL');
      const atKill = await s.store.progress();
      expect(atKill.done).toBeLessThan(total); // killed mid-burst
      const final = await settled(s, total, contacts);
      console.log(
        `[sweep shards, kill -9 ${reg.backend.name}] bursts of ${M}, batches of ${batch}; ${c.id(victim)} killed with ${atKill.done}/${total} escalated; ` +
          `last escalation ${final.lastEscalatedAt - killedAt} ms after the kill`,
      );
      expect(smsPerKey(c).size).toBe(contacts);
    },
  );
}

/** SIGTERM of the holder mid-sweep: graceful exit, the lock released on the way out. */
export function termHolder(reg: ScenarioRegistry): void {
  it(
    'SIGTERM of the holder mid-sweep: it exits 0 with nothing it claimed left pending and the lock released, not left to lapse',
    { timeout: CASE_TIMEOUT_MS },
    async () => {
      const TTL = 10_000; // long: a lock still held after the exit would show for seconds
      const batch = sized(reg.backend, 50, 5);
      const s = await reg.start({ env: { SWEEP_BATCH_SIZE: String(batch), SWEEP_CONCURRENCY: '1', LOCK_TTL_MS: String(TTL) } });
      const c = s.cluster;
      // on a scanning server 60 timers were sometimes all claimed between seeing the sweep under way and the signal
      const N = sized(reg.backend, 1500, 120);
      const { holder: h, fence, contacts } = await midSweep(s, N);
      const termAt = Date.now();
      await c.kill(h, 'SIGTERM');
      const exitedMs = Date.now() - termAt;
      const lockAfterExit = await s.redisGet(LOCK_KEY);
      expect(c.lastExit(h)).toEqual({ code: 0, signal: null });
      // released by the replica on its way out (DEL), not expiring by TTL
      expect(lockAfterExit === null || !lockAfterExit.startsWith(`${c.id(h)}:`)).toBe(true);
      const lastSweep = c.sweeps(h).find((x) => x.fence === fence);
      expect(lastSweep, 'the interrupted sweep logged its line').toBeDefined();
      // what it claimed, it escalated
      expect(await s.store.unfinishedOfFence(fence)).toBe(0);
      // it stopped claiming new batches once the signal came, leaving the rest to the others
      expect(lastSweep!.claimed).toBeLessThan(N);

      const final = await settled(s, N, contacts);
      const others = linesWith(c, 'SOS escalated').filter((l) => l.replica !== c.id(h) && at(l) >= termAt);
      // the lock was handed over at once: another replica escalated well before the TTL could have lapsed
      expect(others.length).toBeGreaterThan(0);
      expect(Math.min(...others.map(at)) - termAt).toBeLessThan(TTL);
      console.log(
        `[SIGTERM ${reg.backend.name}] ${N} timers, batches of ${batch}; ${c.id(h)} (fence ${fence}) exited 0 ${exitedMs} ms after the signal, its sweep having claimed ${lastSweep!.claimed}/${N}; ` +
          `lock after exit: ${lockAfterExit ?? 'free'}; other replicas escalated ${others.length} afterwards` +
          (others.length ? `, the first ${Math.min(...others.map(at)) - termAt} ms after the signal` : '') +
          `; last escalation ${final.lastEscalatedAt - termAt} ms after`,
      );
    },
  );
}

/**
 * Scenario 3: the holder paused (SIGSTOP) past its lease, then resumed. Paused between its
 * lease check and its claim, it claims after waking while the taker claims too: it relies
 * on concurrent CAS.
 */
export function pauseHolder(reg: ScenarioRegistry): void {
  itWithConcurrentCas(
    reg,
    'SIGSTOP of the holder past its lease, another takes over, SIGCONT: the stale holder is recognised; still exactly once',
    { timeout: CASE_TIMEOUT_MS },
    async () => {
      const TTL = 2000;
      const s = await reg.start({ env: { SWEEP_BATCH_SIZE: '50', SWEEP_CONCURRENCY: '1', LOCK_TTL_MS: String(TTL) } });
      const c = s.cluster;
      const N = 2000;
      const LATE = 200;
      const { holder: h, contacts } = await midSweep(s, N);
      // Freeze it between two writes and while it holds the lock. Frozen inside a write, it
      // would keep the SQLite file's write lock and freeze every replica sharing the file (an
      // artefact of the shared-file store; MongoDB has no such lock); between two sweeps it
      // holds no lease to lose. Either way: resume and try again a moment later.
      let attempts = 0;
      let stale = 0;
      for (;;) {
        attempts++;
        await c.kill(h, 'SIGSTOP');
        if ((await s.store.writersFree(300)) && (await holder(c, s.redisGet)) === h) {
          // h holds the lock, so the fence counter is still at h's own acquisition
          stale = Number(await s.redisGet(`${LOCK_KEY}:fence`));
          break;
        }
        await c.kill(h, 'SIGCONT');
        if (attempts >= 50) throw new Error('could not pause the holder outside a write and under its lease 50 times in a row');
        await sleep(5 + Math.random() * 30); // land on another moment of its sweep
      }
      const stoppedAt = Date.now();
      let lateContacts: number | undefined;
      let takerFence: number | undefined;
      try {
        // work only another replica can do while the holder is frozen, whatever is left of the first batch
        lateContacts = (await s.store.seedTimers({ count: LATE, expiresAt: Date.now() - 1000, prefix: 'late-' })).contacts;
        // The lease lapses and another replica's tick takes the lock. Seen in the fence counter,
        // which only an acquisition moves: the lock key itself is held only while a sweep runs
        // (released after each), so sampling it misses a taker whose sweep is short.
        takerFence = await eventually(
          async () => {
            const f = Number(await s.redisGet(`${LOCK_KEY}:fence`));
            return f > stale ? f : undefined;
          },
          `another replica taking the lock (the fence counter moving past ${stale})`,
          TTL + FLOOR_MS,
          20,
        );
        // let the taker work while the stale holder is still frozen
        await eventually(
          async () => (await s.store.incidentsAboveFence(stale)) > 0,
          `an incident opened under a fence above ${stale} while ${c.id(h)} is frozen`,
          FLOOR_MS,
          pollEvery(s.backend, 20),
        );
      } finally {
        await c.kill(h, 'SIGCONT');
      }
      const stoppedMs = Date.now() - stoppedAt;

      const allContacts = contacts + lateContacts;
      await settled(s, N + LATE, allContacts);
      // The stale holder woke up, finished what it had claimed and logged its sweep. Several
      // sweeps may share the fence (a lease kept from one sweep to the next): the last one is
      // the one it was paused in, or, paused between two sweeps, it logged the kept lease lost.
      const staleSweep = await eventually(
        async () =>
          c
            .sweeps(h)
            .filter((x) => x.fence === stale)
            .at(-1),
        `the sweep line of fence ${stale}`,
        FLOOR_MS,
      );
      const lostKept = await eventually(
        async () => staleSweep.lostLease || c.logs(h).some((l) => l.msg === KEPT_LEASE_LOST && l.fence === stale),
        `the lease of fence ${stale} logged lost (its sweep's lostLease, or "${KEPT_LEASE_LOST}")`,
        FLOOR_MS,
      ).catch(() => false);
      const takers = allSweeps(c)
        .filter((x) => x.fence > stale && x.claimed > 0)
        .map((x) => x.replica);
      const { timers: fences, incidents: incidentFences } = await s.store.fences();
      console.log(
        `[SIGSTOP ${reg.backend.name}] ${c.id(h)} (fence ${stale}) stopped ${stoppedMs} ms (TTL ${TTL}; paused outside a write at attempt ${attempts}); first fence after it ${takerFence}, later sweeps that claimed by ${[...new Set(takers)].join(',')}; ` +
          `stale sweep: claimed ${staleSweep.claimed}, lostLease ${staleSweep.lostLease}, kept lease lost between sweeps ${!staleSweep.lostLease && lostKept}; timers by expiring fence ${JSON.stringify(fences)}; incidents by fence ${JSON.stringify(incidentFences)}`,
      );
      // the data tells the stale holder apart: later holders wrote with higher fences
      expect(takers.some((r) => r !== c.id(h))).toBe(true);
      expect(fences.some((f) => f.fence !== null && f.fence > stale)).toBe(true);
      // and so does its log: it could not extend, so it claimed nothing more
      expect(lostKept).toBe(true);
      expect(smsPerKey(c).size).toBe(allContacts);
    },
  );
}

/** Scenario 4: Redis stopped mid-run and started again. Every replica sweeps without the lock meanwhile, so it relies on concurrent CAS. */
export function redisOutage(reg: ScenarioRegistry): void {
  itWithConcurrentCas(
    reg,
    'Redis stopped mid-run and started again: sweeping continues without the lock, nothing lost, nothing twice',
    { timeout: CASE_TIMEOUT_MS },
    async () => {
      const s = await reg.start({ env: { LOCK_TTL_MS: '3000' } });
      const c = s.cluster;
      const N = 300;
      const start = Date.now();
      // due one every 30 ms over 9 s
      const { contacts } = await s.store.seedTimers({ count: N, expiresAt: (i) => start + 1000 + i * 30 });
      await eventually(
        async () => (await s.store.progress()).incidents > 0,
        'sweeping under the lock under way',
        FLOOR_MS,
        pollEvery(s.backend, 50),
      );

      await s.redis.stop();
      const downAt = Date.now();
      // Redis stays down until the outage has shown what it must: every replica reporting the
      // lock unavailable and sweeping without it, escalating meanwhile
      const unavailable = new Set<string>();
      await eventually(
        async () => {
          for (let i = 0; i < c.size; i++) {
            const text = await c.metrics(i);
            if (/^vigil_lock_unavailable\{[^}]*\} 1$/m.test(text)) unavailable.add(c.id(i));
          }
          const sweptWithout = allSweeps(c).some((x) => x.outcome === 'swept_without_lock' && x.startedAt >= downAt);
          return unavailable.size === c.size && sweptWithout && (await s.store.incidentsCreatedBetween(downAt, Date.now())) > 0;
        },
        'every replica sweeping without the lock, escalating, while Redis is down',
        FLOOR_MS,
        250,
      );
      const duringOutage = await s.store.progress();
      await s.redis.start();
      const upAt = Date.now();

      await settled(s, N, contacts);
      const without = allSweeps(c).filter((x) => x.outcome === 'swept_without_lock');
      const escalatedWhileDown = await s.store.incidentsCreatedBetween(downAt, upAt);
      const sweptAfter = await eventually(
        async () => allSweeps(c).filter((x) => x.outcome === 'swept' && x.startedAt > upAt).length || undefined,
        'a sweep under the lock after Redis came back',
        FLOOR_MS,
      );
      const back = await eventually(
        async () => {
          const texts = await Promise.all(Array.from({ length: c.size }, (_, i) => c.metrics(i)));
          return texts.every((t) => /^vigil_lock_unavailable\{[^}]*\} 0$/m.test(t));
        },
        'vigil_lock_unavailable back to 0 everywhere',
        FLOOR_MS,
      );
      const byReplica: Record<string, number> = {};
      for (const x of without) byReplica[x.replica] = (byReplica[x.replica] ?? 0) + x.claimed;
      console.log(
        `[redis down ${reg.backend.name}] ${upAt - downAt} ms outage: ${escalatedWhileDown} incidents opened meanwhile (${duringOutage.incidents}/${N} by its end); ` +
          `${without.length} sweeps without the lock (claimed per replica ${JSON.stringify(byReplica)}), ` +
          `overlapping ones: ${overlaps(workWindows(c, 'swept_without_lock')).length}; vigil_lock_unavailable=1 seen on ${[...unavailable].join(',')}; ` +
          `${sweptAfter} sweeps under the lock after; gauge back to 0: ${back}`,
      );
      expect(escalatedWhileDown).toBeGreaterThan(0);
      expect(without.filter((x) => x.startedAt >= downAt && x.startedAt <= upAt).length).toBeGreaterThan(0);
      expect(unavailable.size).toBe(c.size);
      // every SMS handed over once: the delivery leases are in the store, not in Redis
      expect([...smsPerKey(c).values()].every((n) => n === 1)).toBe(true);
    },
  );
}

/** Scenario 5: every replica its own LOCK_NAME, so all three sweep at once: exactly once rests on the store's CAS alone. */
export function concurrentSweepers(reg: ScenarioRegistry): void {
  itWithConcurrentCas(
    reg,
    'two replicas forced to sweep at once (each its own LOCK_NAME): 1000 timers still escalate exactly once',
    { timeout: CASE_TIMEOUT_MS },
    async () => {
      // configuration of the test, not a switch: each replica locks a name of its own
      const s = await reg.start({ env: (i) => ({ LOCK_NAME: `vigil:sweep:${i + 1}`, SWEEP_BATCH_SIZE: '50', SWEEP_CONCURRENCY: '4' }) });
      const c = s.cluster;
      const N = 1000;
      const { contacts } = await s.store.seedTimers({ count: N, expiresAt: Date.now() + 1500 });
      await settled(s, N, contacts);

      const swept = allSweeps(c).filter((x) => x.outcome === 'swept' && x.claimed > 0);
      const concurrent = overlaps(workWindows(c)).filter((o) => o.ms > 0);
      const claimed: Record<string, number> = {};
      for (const x of swept) claimed[x.replica] = (claimed[x.replica] ?? 0) + x.claimed;
      const repaired = allSweeps(c).reduce((n, x) => n + x.repaired, 0);
      console.log(
        `[no lock between them ${reg.backend.name}] claimed per replica ${JSON.stringify(claimed)}, ${concurrent.length} pairs of sweeps at the same time ` +
          `(max ${Math.max(0, ...concurrent.map((o) => o.ms))} ms), ${repaired} escalations re-run from another replica's pending claim`,
      );
      // they did sweep at the same time, and each timer was claimed by exactly one of them (the CAS)
      expect(Object.keys(claimed).length).toBeGreaterThanOrEqual(2);
      expect(concurrent.length).toBeGreaterThan(0);
      expect(Object.values(claimed).reduce((a, b) => a + b, 0)).toBe(N);
      expect([...smsPerKey(c).values()].every((n) => n === 1)).toBe(true);
    },
  );
}
