/**
 * Race cases: compare-and-swaps from two connections on one database at the same moment,
 * one side on the test's store and the other on the adapter's race peer (its own thread
 * when the driver is synchronous, see ./sqlite-peer.ts). Each case checks the outcome
 * only a working CAS gives, and, when the peer truly runs in parallel, that both sides
 * won some of the trials: a race one side always wins did not happen, and its test could
 * not fail. Skipped, with the reason in the test name, on adapters that cannot make CAS
 * atomic (FerretDB v1).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { Timer } from '../../src/domain/timer.js';
import type { NewTimer, Store } from '../../src/store/port.js';
import { runStep, type Claim } from './race-steps.js';
import { arm, armDue, at, countBy, newTimer, shuffle, Split, raceIt, type ContractContext } from './store-contract-helpers.js';

async function inChunks<T>(xs: readonly T[], size: number, fn: (x: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < xs.length; i += size) await Promise.all(xs.slice(i, i + size).map(fn));
}

/** `n` timers of `n` different people, all with the same start and deadline. */
const timersFor = (n: number, startedAt: Date, expiresAt: Date): NewTimer[] =>
  Array.from({ length: n }, () => ({ id: randomUUID(), userId: randomUUID(), startedAt, expiresAt }));

async function armAll(store: Store, timers: readonly NewTimer[]): Promise<void> {
  await inChunks(timers, 16, async (t) => {
    const r = await store.armTimer(t);
    if (r.kind !== 'created') throw new Error(`arm ${t.id}: ${r.kind}`);
  });
}

export function raceCases(ctx: ContractContext): void {
  const itRaces = raceIt(ctx);

  describe('races', () => {
    itRaces(
      'invariant 2: arms at once for one person from both sides → exactly one live timer (200+ trials)',
      async () => {
        const [store, peer] = [ctx.store(), await ctx.peer()];
        const split = new Split(ctx, 'five arms on each side for one person');
        await split.trials(peer, 200, async () => {
          const userId = randomUUID();
          const timers = await Promise.all(Array.from({ length: 10 }, () => newTimer(store, { userId })));
          const [mine, theirs] = await peer.race(() => runStep(store, 'arm', { timers: timers.slice(0, 5) }), 'arm', {
            timers: timers.slice(5),
          });
          const kinds = countBy([...mine, ...theirs], (k) => k);
          expect(kinds.get('created')).toBe(1);
          expect(kinds.get('live_timer_exists')).toBe(9);
          expect(await store.listTimers(userId, { status: 'active' })).toHaveLength(1);
          if (mine.includes('created')) split.mine++;
          else split.theirs++;
        });
      },
      120_000,
    );

    itRaces(
      'invariant 2: safe and cancel racing on one timer → exactly one wins (1,000+ trials)',
      async () => {
        const [store, peer] = [ctx.store(), await ctx.peer()];
        const split = new Split(ctx, 'safe (this side) vs cancel (peer) on one timer');
        await split.trials(peer, 1000, async () => {
          const t = await arm(store);
          const [s, c] = await peer.race(() => store.resolveTimer(t.id, t.userId, 'safe'), 'resolve', {
            id: t.id,
            userId: t.userId,
            to: 'cancelled',
          });
          expect([s, c].filter((x) => x !== null)).toHaveLength(1);
          expect((await store.getTimer(t.id))?.status).toBe((s ?? c)?.status);
          if (s) split.mine++;
          else split.theirs++;
        });
      },
      120_000,
    );

    itRaces(
      'invariant 3: two claims at once on the same due timers partition them (200+ trials × 10 timers)',
      async () => {
        const [store, peer] = [ctx.store(), await ctx.peer()];
        const split = new Split(ctx, 'claims of 10 due timers (trials where a side claimed any)');
        await split.trials(peer, 200, async () => {
          const due: Timer[] = [];
          for (let i = 0; i < 10; i++) due.push(await armDue(store));
          const [a, b] = await peer.race(async () => (await store.claimDueTimers(10, 1)).map((t) => t.id), 'claim', {
            limit: 10,
            fence: 2,
          });
          const ids = [...a, ...b];
          expect(new Set(ids).size).toBe(ids.length);
          expect(ids.sort()).toEqual(due.map((t) => t.id).sort());
          for (const t of await Promise.all(due.map((d) => store.getTimer(d.id))))
            expect(t?.expiredByFence).toBe(a.includes(t?.id ?? '') ? 1 : 2);
          if (a.length > 0) split.mine++;
          if (b.length > 0) split.theirs++;
        });
      },
      120_000,
    );

    itRaces(
      'invariant 3: concurrent openIncident for one timer creates exactly one incident (200+ trials)',
      async () => {
        const [store, peer] = [ctx.store(), await ctx.peer()];
        const split = new Split(ctx, 'openIncident ×5 on each side for one timer');
        const trials = await split.trials(peer, 200, async () => {
          const armed = await armDue(store);
          const [timer] = await store.claimDueTimers(1, 1);
          if (timer?.id !== armed.id) throw new Error('the due timer was not claimed');
          const [mine, theirs] = await peer.race(() => runStep(store, 'openIncident', { timer, fence: 1, times: 5 }), 'openIncident', {
            timer,
            fence: 1,
            times: 5,
          });
          const results = [...mine, ...theirs];
          expect(results.filter((r) => r.created)).toHaveLength(1);
          expect(new Set(results.map((r) => r.incidentId)).size).toBe(1);
          if (mine.some((r) => r.created)) split.mine++;
          else split.theirs++;
        });
        const incidents = await store.listIncidents({ limit: 10 * trials });
        expect(incidents).toHaveLength(trials);
        expect(new Set(incidents.map((i) => i.timerId)).size).toBe(trials);
      },
      120_000,
    );

    // The two cases below race whole loops, and on SQLite whoever takes the file's write lock
    // first keeps it for most of a round (the other backs off in busy_timeout's growing
    // sleeps), so one round's split can be one-sided on a loaded machine. The overlap check
    // is therefore over the aggregate of the rounds: who starts first varies from round to round.
    itRaces(
      'invariant 2/3: check-in racing the sweep at the deadline — 10 rounds × 100 timers, one winner each',
      async () => {
        const [store, peer] = [ctx.store(), await ctx.peer()];
        const ROUNDS = 10;
        const N = 100;
        const split = new Split(ctx, `check-in (this side) vs sweep (peer), ${ROUNDS} rounds × ${N} timers (timers won)`);
        const incidentsBefore = new Set<string>();
        for (let round = 0; round < ROUNDS; round++) {
          const now = await store.now();
          // a store clock the test cannot move is waited for; arming longer than this just starts with every timer due
          const deadline = at(now, 300);
          const timers = timersFor(N, at(now, -60_000), deadline);
          await armAll(store, timers);
          // start as the deadline passes: every check-in now races a sweep that may claim the same timer
          // (starting earlier lets fast adapters finish all check-ins before anything is due: no race at all)
          await ctx.passTime(at(deadline, -1));

          const [safeIds, swept] = await peer.race(
            () => runStep(store, 'checkIns', { timers: shuffle(timers).map(({ id, userId }) => ({ id, userId })), lanes: 8 }),
            'sweep',
            { fence: 1, batch: 10, notBeforeMs: deadline.getTime() },
          );
          const leftovers = await runStep(store, 'sweep', { fence: 2, batch: 1000, notBeforeMs: 0 });
          const claimedBy = new Map<string, number[]>();
          for (const c of [...swept, ...leftovers]) claimedBy.set(c.timerId, [...(claimedBy.get(c.timerId) ?? []), c.fence]);
          const safeSet = new Set(safeIds);

          const final = await Promise.all(timers.map((t) => store.getTimer(t.id)));
          const byStatus = countBy(final, (t) => t?.status ?? 'missing');
          const all = await store.listIncidents({ limit: 100 * N });
          const incidents = countBy(
            all.filter((i) => !incidentsBefore.has(i.id)),
            (i) => i.timerId,
          );
          for (const i of all) incidentsBefore.add(i.id);
          const safe = byStatus.get('safe') ?? 0;
          const expired = byStatus.get('expired') ?? 0;
          split.mine += safe;
          split.theirs += swept.length;

          expect(safe + expired).toBe(N);
          expect(safeIds).toHaveLength(safe);
          expect(leftovers).toEqual([]);
          for (const t of final) {
            if (!t) throw new Error('timer missing');
            const claims = claimedBy.get(t.id) ?? [];
            if (t.status === 'safe') {
              expect(safeSet.has(t.id)).toBe(true);
              expect(claims).toEqual([]);
              expect(incidents.get(t.id) ?? 0).toBe(0);
            } else {
              expect(safeSet.has(t.id)).toBe(false);
              expect(claims).toHaveLength(1);
              expect(t.expiredByFence).toBe(claims[0]);
              expect(incidents.get(t.id)).toBe(1);
            }
          }
          expect([...incidents.values()].reduce((a, b) => a + b, 0)).toBe(expired);
        }
        split.check(peer, ROUNDS * N, 'timers');
      },
      120_000,
    );

    itRaces(
      'invariant 3: two sweepers at once escalate each timer exactly once — 20 rounds × 25 timers',
      async () => {
        const [store, peer] = [ctx.store(), await ctx.peer()];
        const ROUNDS = 20;
        const N = 25;
        const split = new Split(ctx, `two sweepers, ${ROUNDS} rounds × ${N} due timers (timers claimed)`);
        const all: NewTimer[] = [];
        const claimedBy = new Map<string, number[]>();
        for (let round = 0; round < ROUNDS; round++) {
          const now = await store.now();
          const timers = timersFor(N, at(now, -60_000), at(now, -1_000));
          all.push(...timers);
          await armAll(store, timers);

          const sweepArgs = { batch: 5, notBeforeMs: 0 };
          const [one, two] = await peer.race(() => runStep(store, 'sweep', { ...sweepArgs, fence: 1 }), 'sweep', {
            ...sweepArgs,
            fence: 2,
          });
          split.mine += one.length;
          split.theirs += two.length;
          expect(one.length + two.length).toBe(N);
          for (const c of [...one, ...two] as Claim[]) claimedBy.set(c.timerId, [...(claimedBy.get(c.timerId) ?? []), c.fence]);
        }

        const total = ROUNDS * N;
        expect(claimedBy.size).toBe(total);
        const incidents = await store.listIncidents({ limit: 10 * total });
        expect(incidents).toHaveLength(total);
        const perTimer = countBy(incidents, (i) => i.timerId);
        for (const t of all) {
          const claims = claimedBy.get(t.id);
          expect(claims).toHaveLength(1);
          expect(perTimer.get(t.id)).toBe(1);
          expect(incidents.find((i) => i.timerId === t.id)?.fence).toBe(claims?.[0]);
        }
        split.check(peer, total, 'timers');
      },
      120_000,
    );
  });
}
