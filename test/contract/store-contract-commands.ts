/**
 * Timer commands under an Idempotency-Key, and the keyset order of changes: a retried
 * command never acts twice (invariant 6), and a change is never skipped by `since`.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { IdempotencyClaim } from '../../src/store/port.js';
import { runStep } from './race-steps.js';
import { arm, at, countBy, raceIt, type ContractContext } from './store-contract-helpers.js';

const caps = { maxExtensions: 10, maxTotalSeconds: 172_800 };
const claim = (fingerprint = 'fp-1'): IdempotencyClaim => ({ key: `key-${randomUUID()}`, fingerprint });

export function commandCases(ctx: ContractContext): void {
  const { it: caseIt } = ctx;
  const itRaces = raceIt(ctx);

  describe('timers: commands under an Idempotency-Key', () => {
    caseIt('invariant 6: a retried extend with the same key extends once; the retry is replayed with the timer as it is', async () => {
      const store = ctx.store();
      const t = await arm(store);
      const idem = claim();
      const first = await store.extendTimerKeyed(t.id, t.userId, 60, caps, idem);
      expect(first.kind).toBe('applied');
      const again = await store.extendTimerKeyed(t.id, t.userId, 60, caps, idem);
      expect(again).toMatchObject({ kind: 'replayed', timer: { id: t.id, extensions: 1 } });
      const now = await store.getTimer(t.id);
      expect(now?.extensions).toBe(1);
      expect(now?.expiresAt.getTime()).toBe(t.expiresAt.getTime() + 60_000);
    });

    caseIt('the same key with another fingerprint (body, command or timer) → idempotency_mismatch, nothing changes', async () => {
      const store = ctx.store();
      const t = await arm(store);
      const idem = claim('extend-60');
      expect((await store.extendTimerKeyed(t.id, t.userId, 60, caps, idem)).kind).toBe('applied');
      expect(await store.extendTimerKeyed(t.id, t.userId, 120, caps, { ...idem, fingerprint: 'extend-120' })).toEqual({
        kind: 'idempotency_mismatch',
      });
      expect(await store.resolveTimerKeyed(t.id, t.userId, 'safe', { ...idem, fingerprint: 'safe' })).toEqual({
        kind: 'idempotency_mismatch',
      });
      expect(await store.getTimer(t.id)).toMatchObject({ status: 'extended', extensions: 1 });
    });

    caseIt('invariant 6: a retried resolve with the same key is replayed with the resolved timer', async () => {
      const store = ctx.store();
      const t = await arm(store);
      const idem = claim();
      const first = await store.resolveTimerKeyed(t.id, t.userId, 'safe', idem);
      expect(first).toMatchObject({ kind: 'applied', timer: { id: t.id, status: 'safe' } });
      const again = await store.resolveTimerKeyed(t.id, t.userId, 'safe', idem);
      expect(again).toMatchObject({ kind: 'replayed', timer: { id: t.id, status: 'safe' } });
      if (first.kind === 'applied' && again.kind === 'replayed') expect(again.timer.updatedAt).toEqual(first.timer.updatedAt);
    });

    caseIt('a key is scoped per person: used on one timer, it is refused on another timer of that person', async () => {
      const store = ctx.store();
      const a = await arm(store);
      const idem = claim(`cancel:${a.id}`);
      expect((await store.resolveTimerKeyed(a.id, a.userId, 'cancelled', idem)).kind).toBe('applied');
      const b = await arm(store, { userId: a.userId });
      expect(await store.resolveTimerKeyed(b.id, b.userId, 'cancelled', { ...idem, fingerprint: `cancel:${b.id}` })).toEqual({
        kind: 'idempotency_mismatch',
      });
      expect((await store.getTimer(b.id))?.status).toBe('active');
      // another person's key space is their own
      const c = await arm(store);
      expect((await store.resolveTimerKeyed(c.id, c.userId, 'cancelled', { ...idem, fingerprint: `cancel:${c.id}` })).kind).toBe('applied');
    });

    caseIt('a key that armed a timer is refused for a command', async () => {
      const store = ctx.store();
      const userId = randomUUID();
      const now = await store.now();
      const idem = claim('arm-body');
      const armed = await store.armTimer({ id: randomUUID(), userId, startedAt: now, expiresAt: at(now, 3_600_000) }, idem);
      if (armed.kind !== 'created') throw new Error(armed.kind);
      expect(await store.resolveTimerKeyed(armed.timer.id, userId, 'safe', { ...idem, fingerprint: 'safe' })).toEqual({
        kind: 'idempotency_mismatch',
      });
      expect((await store.getTimer(armed.timer.id))?.status).toBe('active');
    });

    caseIt('a key that applied a command is refused for arming', async () => {
      const store = ctx.store();
      const t = await arm(store);
      const idem = claim('cancel-body');
      expect((await store.resolveTimerKeyed(t.id, t.userId, 'cancelled', idem)).kind).toBe('applied');
      const now = await store.now();
      const r = await store.armTimer(
        { id: randomUUID(), userId: t.userId, startedAt: now, expiresAt: at(now, 3_600_000) },
        { ...idem, fingerprint: 'arm-body' },
      );
      expect(r).toEqual({ kind: 'idempotency_mismatch' });
      expect(await store.listTimers(t.userId)).toHaveLength(1);
    });

    caseIt('a refused CAS records nothing: the key stays free for a request that applies', async () => {
      const store = ctx.store();
      const t = await arm(store);
      await store.resolveTimer(t.id, t.userId, 'cancelled');
      const idem = claim();
      expect(await store.resolveTimerKeyed(t.id, t.userId, 'safe', idem)).toEqual({ kind: 'refused' });
      expect(await store.resolveTimerKeyed(t.id, 'someone-else', 'safe', idem)).toEqual({ kind: 'refused' });
      const next = await arm(store, { userId: t.userId });
      expect((await store.resolveTimerKeyed(next.id, t.userId, 'safe', idem)).kind).toBe('applied');
    });

    itRaces('invariant 6: ten concurrent retries of one keyed extend, on two connections, extend once', async () => {
      const [store, peer] = [ctx.store(), await ctx.peer()];
      const t = await arm(store);
      const idem = claim();
      const args = { id: t.id, userId: t.userId, seconds: 60, caps, idem, times: 5 };
      const [mine, theirs] = await peer.race(() => runStep(store, 'extendKeyed', args), 'extendKeyed', args);
      const kinds = countBy([...mine, ...theirs], (k) => k);
      expect(kinds.get('applied')).toBe(1);
      expect(kinds.get('replayed')).toBe(9);
      expect((await store.getTimer(t.id))?.extensions).toBe(1);
    });
  });

  describe('timers: changes since, keyset (updatedAt, id)', () => {
    caseIt('a record updated at exactly `since` comes when its id sorts after `sinceId`, not otherwise', async () => {
      const store = ctx.store();
      const t = await arm(store);
      const since = t.updatedAt;
      expect(await store.listTimers(t.userId, { since })).toEqual([]);
      expect((await store.listTimers(t.userId, { since, sinceId: '' })).map((x) => x.id)).toEqual([t.id]);
      expect(await store.listTimers(t.userId, { since, sinceId: t.id })).toEqual([]);
    });

    caseIt('following the keyset one record at a time returns every change once, in (updatedAt, id) order', async () => {
      const store = ctx.store();
      const userId = randomUUID();
      const start = await store.now();
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        const t = await arm(store, { userId });
        await store.resolveTimer(t.id, userId, 'cancelled');
        ids.push(t.id);
      }
      const seen: { id: string; at: number }[] = [];
      let pos: { since: Date; sinceId?: string } = { since: at(start, -1) };
      for (let i = 0; i < 10; i++) {
        const [next] = await store.listTimers(userId, { ...pos, limit: 1 });
        if (!next) break;
        seen.push({ id: next.id, at: next.updatedAt.getTime() });
        pos = { since: next.updatedAt, sinceId: next.id };
      }
      expect(seen.map((s) => s.id).sort()).toEqual([...ids].sort());
      const sorted = [...seen].sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      expect(seen).toEqual(sorted);
    });

    caseIt('incidents follow the same keyset', async () => {
      const store = ctx.store();
      const before = await store.now();
      const mine = new Set<string>();
      for (let i = 0; i < 3; i++) {
        const t = await arm(store, { startOffsetMs: -120_000, expiresInMs: -1_000 });
        const [claimed] = (await store.claimDueTimers(1000, 1)).filter((x) => x.id === t.id);
        if (!claimed) throw new Error('not claimed');
        mine.add((await store.openIncident(claimed, 1, randomUUID())).incident.id);
      }
      const seen: string[] = [];
      let pos: { since: Date; sinceId?: string } = { since: at(before, -1) };
      for (let i = 0; i < 20; i++) {
        const [next] = await store.listIncidents({ ...pos, limit: 1 });
        if (!next) break;
        if (mine.has(next.id)) seen.push(next.id);
        pos = { since: next.updatedAt, sinceId: next.id };
      }
      expect(seen.sort()).toEqual([...mine].sort());
    });
  });
}
