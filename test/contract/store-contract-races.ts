/**
 * Race cases: many concurrent compare-and-swaps on one database, through two
 * connections when the adapter offers a peer. Skipped, with the reason in the test
 * name, on adapters that cannot make CAS atomic (FerretDB v1).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Timer } from '../../src/domain/timer.js';
import type { NewTimer, Store } from '../../src/store/port.js';
import { arm, armDue, at, countBy, newTimer, shuffle, untilAfter, type ContractContext } from './store-contract-helpers.js';

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

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

/** A sweeper: claim + open incidents until `stop()` is true and a claim comes back empty. */
async function sweeper(store: Store, fence: number, batch: number, claimedBy: Map<string, number[]>, stop: () => boolean): Promise<number> {
  let claimed = 0;
  for (;;) {
    const finishing = stop();
    const timers = await store.claimDueTimers(batch, fence);
    for (const t of timers) {
      claimedBy.set(t.id, [...(claimedBy.get(t.id) ?? []), fence]);
      await store.openIncident(t, fence, randomUUID());
    }
    claimed += timers.length;
    if (timers.length === 0) {
      if (finishing) return claimed;
      await yieldToLoop();
    }
  }
}

export function raceCases(ctx: ContractContext): void {
  const reason = ctx.opts.racesUnsupported;
  const itRaces = (title: string, fn: () => Promise<void>, timeoutMs?: number) =>
    reason ? it.skip(`[skipped on ${ctx.name}: ${reason}] ${title}`, fn) : it(title, fn, timeoutMs);

  describe('races', () => {
    itRaces('invariant 2: ten arms at once for one person → exactly one live timer', async () => {
      const [store, peer] = [ctx.store(), await ctx.peer()];
      const userId = randomUUID();
      const attempts = await Promise.all(
        Array.from({ length: 10 }, async (_, i) => (i % 2 ? peer : store).armTimer(await newTimer(store, { userId }))),
      );
      const kinds = countBy(attempts, (r) => r.kind);
      expect(kinds.get('created')).toBe(1);
      expect(kinds.get('live_timer_exists')).toBe(9);
      expect(await store.listTimers(userId, { status: 'active' })).toHaveLength(1);
    });

    itRaces('invariant 2: safe and cancel racing on one timer → exactly one wins', async () => {
      const [store, peer] = [ctx.store(), await ctx.peer()];
      for (let trial = 0; trial < 50; trial++) {
        const t = await arm(store);
        const [s, c] = await Promise.all([store.resolveTimer(t.id, t.userId, 'safe'), peer.resolveTimer(t.id, t.userId, 'cancelled')]);
        expect([s, c].filter((x) => x !== null)).toHaveLength(1);
        expect((await store.getTimer(t.id))?.status).toBe((s ?? c)?.status);
      }
    });

    itRaces('invariant 3: two claims at once on 50 due timers partition them', async () => {
      const [store, peer] = [ctx.store(), await ctx.peer()];
      const due: Timer[] = [];
      for (let i = 0; i < 50; i++) due.push(await armDue(store));
      const [a, b] = await Promise.all([store.claimDueTimers(50, 1), peer.claimDueTimers(50, 2)]);
      const ids = [...a, ...b].map((t) => t.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.sort()).toEqual(due.map((t) => t.id).sort());
    });

    itRaces('invariant 3: concurrent openIncident for one timer creates exactly one incident', async () => {
      const [store, peer] = [ctx.store(), await ctx.peer()];
      await armDue(store);
      const [timer] = await store.claimDueTimers(1, 1);
      if (!timer) throw new Error('nothing claimed');
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? peer : store).openIncident(timer, 1, randomUUID())));
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(results.map((r) => r.incident.id)).size).toBe(1);
      expect(await store.listIncidents()).toHaveLength(1);
    });

    itRaces(
      'invariant 2/3: check-in racing the sweep at the deadline — 1,000 trials',
      async () => {
        const [store, peer] = [ctx.store(), await ctx.peer()];
        const N = 1000;
        const now = await store.now();
        // if arming takes longer than this, the race simply starts with every timer already due
        const deadline = at(now, 300);
        const timers = timersFor(N, at(now, -60_000), deadline);
        await armAll(store, timers);
        const armedLeadMs = deadline.getTime() - (await store.now()).getTime();
        // start as the deadline passes: every check-in now races a sweep that may claim the same timer
        // (starting earlier lets fast adapters finish all check-ins before anything is due: no race at all)
        await untilAfter(store, at(deadline, -1));

        const safeIds = new Set<string>();
        const claimedBy = new Map<string, number[]>();
        let checkinsDone = false;
        const lanes = Array.from({ length: 8 }, () => [] as NewTimer[]);
        shuffle(timers).forEach((t, i) => lanes[i % lanes.length]?.push(t));
        const checkins = Promise.all(
          lanes.map(async (lane) => {
            for (const t of lane) if (await store.resolveTimer(t.id, t.userId, 'safe')) safeIds.add(t.id);
          }),
        ).then(() => {
          checkinsDone = true;
        });
        await Promise.all([checkins, sweeper(peer, 1, 100, claimedBy, () => checkinsDone)]);
        await sweeper(store, 2, 1000, claimedBy, () => true); // leftovers

        const final = await Promise.all(timers.map((t) => store.getTimer(t.id)));
        const byStatus = countBy(final, (t) => t?.status ?? 'missing');
        const incidents = countBy(await store.listIncidents({ limit: 10 * N }), (i) => i.timerId);
        const safe = byStatus.get('safe') ?? 0;
        const expired = byStatus.get('expired') ?? 0;
        console.log(`[${ctx.name}] check-in vs sweep, ${N} trials: ${safe} safe, ${expired} expired (arming ended ${Math.abs(armedLeadMs)}ms ${armedLeadMs >= 0 ? 'before' : 'after'} the deadline)`);
        if (safe === 0 || expired === 0) console.log(`[${ctx.name}] only one outcome occurred in this run; the race was one-sided`);

        expect(safe + expired).toBe(N);
        for (const t of final) {
          if (!t) throw new Error('timer missing');
          const claims = claimedBy.get(t.id) ?? [];
          if (t.status === 'safe') {
            expect(safeIds.has(t.id)).toBe(true);
            expect(claims).toEqual([]);
            expect(incidents.get(t.id) ?? 0).toBe(0);
          } else {
            expect(safeIds.has(t.id)).toBe(false);
            expect(claims).toHaveLength(1);
            expect(t.expiredByFence).toBe(claims[0]);
            expect(incidents.get(t.id)).toBe(1);
          }
        }
        expect([...incidents.values()].reduce((a, b) => a + b, 0)).toBe(expired);
      },
      120_000,
    );

    itRaces(
      'invariant 3: two sweepers at once escalate each timer exactly once',
      async () => {
        const [store, peer] = [ctx.store(), await ctx.peer()];
        const N = 500;
        const now = await store.now();
        const timers = timersFor(N, at(now, -60_000), at(now, -1_000));
        await armAll(store, timers);

        const claimedBy = new Map<string, number[]>();
        const [one, two] = await Promise.all([sweeper(store, 1, 25, claimedBy, () => true), sweeper(peer, 2, 25, claimedBy, () => true)]);
        console.log(`[${ctx.name}] two sweepers over ${N} due timers: ${one} and ${two} claimed`);

        expect(one + two).toBe(N);
        expect(claimedBy.size).toBe(N);
        const incidents = await store.listIncidents({ limit: 10 * N });
        expect(incidents).toHaveLength(N);
        const perTimer = countBy(incidents, (i) => i.timerId);
        for (const t of timers) {
          const claims = claimedBy.get(t.id);
          expect(claims).toHaveLength(1);
          expect(perTimer.get(t.id)).toBe(1);
          expect(incidents.find((i) => i.timerId === t.id)?.fence).toBe(claims?.[0]);
        }
      },
      120_000,
    );
  });
}
