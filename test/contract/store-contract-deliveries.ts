/** Contract cases for deliveries: insert-once, lease, attempts, receipts, backlog. */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import { receiptFrom } from '../../src/domain/delivery.js';
import type { Store } from '../../src/store/port.js';
import { at, newDeliveries, openedIncident, type ContractContext } from './store-contract-helpers.js';

const LEASE = 60_000;

/** An incident with `n` pending deliveries. */
async function withDeliveries(store: Store, n: number, userId?: string) {
  const { incident } = await openedIncident(store, userId === undefined ? {} : { userId });
  const list = newDeliveries(incident.id, n);
  const added = await store.addDeliveries(incident, list);
  return { incident, list, added };
}

/** One delivery claimed and recorded as sent with a fresh provider id. */
async function sentDelivery(store: Store) {
  const { list } = await withDeliveries(store, 1);
  const [claimed] = await store.claimDeliveries(10, LEASE);
  if (!claimed || claimed.key !== list[0]?.key) throw new Error('claim failed');
  const providerMessageId = `SM${randomUUID().replace(/-/g, '')}`;
  const sent = await store.recordAttempt(claimed.key, claimed.attempts, { status: 'sent', carrier: 'twilio', providerMessageId });
  if (!sent) throw new Error('recordAttempt failed');
  return { sent, providerMessageId };
}

export function deliveryCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('deliveries', () => {
    it('invariant 5: addDeliveries inserts pending deliveries, one per key', async () => {
      const store = ctx.store();
      const before = await store.now();
      const { incident, list, added } = await withDeliveries(store, 2);
      expect(added.map((d) => d.key).sort()).toEqual(list.map((d) => d.key).sort());
      for (const d of added) {
        const src = list.find((x) => x.key === d.key);
        expect(d).toMatchObject({ ...src, incidentId: incident.id, userId: incident.userId, status: 'pending', attempts: 0 });
        expect(d.nextAttemptAt.getTime()).toBeGreaterThanOrEqual(before.getTime());
        expect(d.nextAttemptAt.getTime()).toBeLessThanOrEqual((await store.now()).getTime());
        expect(await store.getDelivery(d.key)).toEqual(d);
      }
      expect(await store.getDelivery(randomUUID())).toBeNull();
    });

    it('invariant 5: adding the same keys again plus one new → no duplicates, originals untouched, returns all', async () => {
      const store = ctx.store();
      const { incident, list, added } = await withDeliveries(store, 2);
      const extra = newDeliveries(incident.id, 1);
      const changed = list.map((d) => ({ ...d, body: 'a different body' }));
      const all = await store.addDeliveries(incident, [...changed, ...extra]);
      expect(all.map((d) => d.key).sort()).toEqual([...list, ...extra].map((d) => d.key).sort());
      for (const d of added) expect(all.find((x) => x.key === d.key)).toEqual(d);
      expect(await store.deliveriesFor([incident.id])).toHaveLength(3);
    });

    it('deliveriesFor returns the deliveries of every given incident and nothing else', async () => {
      const store = ctx.store();
      const a = await withDeliveries(store, 2);
      const b = await withDeliveries(store, 1);
      const c = await withDeliveries(store, 1);
      const got = await store.deliveriesFor([a.incident.id, b.incident.id]);
      expect(got.map((d) => d.key).sort()).toEqual([...a.list, ...b.list].map((d) => d.key).sort());
      expect(got.some((d) => d.incidentId === c.incident.id)).toBe(false);
      expect(await store.deliveriesFor([])).toEqual([]);
    });

    it('claimDeliveries leases due pending deliveries: sending, attempts + 1, leaseUntil set; not claimed again while leased', async () => {
      const store = ctx.store();
      const { list } = await withDeliveries(store, 3);
      const before = await store.now();
      const first = await store.claimDeliveries(2, LEASE);
      const second = await store.claimDeliveries(10, LEASE);
      expect(first).toHaveLength(2);
      expect(second).toHaveLength(1);
      const claimed = [...first, ...second];
      expect(claimed.map((d) => d.key).sort()).toEqual(list.map((d) => d.key).sort());
      for (const d of claimed) {
        expect(d).toMatchObject({ status: 'sending', attempts: 1 });
        expect(d.leaseUntil?.getTime()).toBeGreaterThanOrEqual(before.getTime() + LEASE);
      }
      expect(await store.claimDeliveries(10, LEASE)).toEqual([]);
    });

    it('invariant 5: a lapsed lease makes the delivery claimable again (attempts + 1); the stale attempt cannot record', async () => {
      const store = ctx.store();
      const { list } = await withDeliveries(store, 1);
      const [first] = await store.claimDeliveries(10, 50);
      if (!first?.leaseUntil) throw new Error('claim failed');
      expect(await store.claimDeliveries(10, 50)).toEqual([]);
      await ctx.passTime(at(first.leaseUntil, 70));
      const [second] = await store.claimDeliveries(10, LEASE);
      expect(second).toMatchObject({ key: list[0]?.key, status: 'sending', attempts: 2 });
      const ok = { status: 'sent' as const, carrier: 'twilio', providerMessageId: 'SM1' };
      expect(await store.recordAttempt(first.key, 1, ok)).toBeNull();
      const sent = await store.recordAttempt(first.key, 2, ok);
      expect(sent).toMatchObject({ status: 'sent', carrier: 'twilio', providerMessageId: 'SM1', attempts: 2 });
      expect(await store.recordAttempt(first.key, 2, { ...ok, providerMessageId: 'SM2' })).toBeNull();
      expect(await store.getDelivery(first.key)).toEqual(sent);
    });

    it('a retry scheduled in the future is not claimed until its time', async () => {
      const store = ctx.store();
      await withDeliveries(store, 1);
      const [d] = await store.claimDeliveries(10, LEASE);
      if (!d) throw new Error('claim failed');
      const nextAttemptAt = at(await store.now(), 150);
      const pending = await store.recordAttempt(d.key, 1, { status: 'pending', carrier: 'twilio', error: 'timeout', nextAttemptAt });
      expect(pending).toMatchObject({ status: 'pending', lastError: 'timeout', nextAttemptAt, attempts: 1 });
      expect(await store.claimDeliveries(10, LEASE)).toEqual([]);
      await ctx.passTime(nextAttemptAt);
      const again = await store.claimDeliveries(10, LEASE);
      expect(again.map((x) => [x.key, x.attempts])).toEqual([[d.key, 2]]);
    });

    it('failed and dead outcomes are final: never claimed again', async () => {
      const store = ctx.store();
      await withDeliveries(store, 2);
      const [a, b] = await store.claimDeliveries(10, 50);
      if (!a || !b) throw new Error('claim failed');
      expect(await store.recordAttempt(a.key, 1, { status: 'failed', carrier: 'twilio', error: 'invalid_number' })).toMatchObject({
        status: 'failed',
        lastError: 'invalid_number',
      });
      expect(await store.recordAttempt(b.key, 1, { status: 'dead', carrier: 'twilio', error: 'timeout' })).toMatchObject({
        status: 'dead',
      });
      await ctx.passTime(at(await store.now(), 70));
      expect(await store.claimDeliveries(10, LEASE)).toEqual([]);
    });

    it('receipts move forward only: sent → delivered; a late sent and a duplicate delivered → stale', async () => {
      const store = ctx.store();
      const { sent, providerMessageId } = await sentDelivery(store);
      const delivered = await store.applyReceipt(providerMessageId, 'delivered', receiptFrom('delivered'));
      expect(delivered).toMatchObject({ result: 'applied', delivery: { key: sent.key, status: 'delivered' } });
      expect(await store.applyReceipt(providerMessageId, 'sent', receiptFrom('sent'))).toEqual({ result: 'stale' });
      expect(await store.applyReceipt(providerMessageId, 'delivered', receiptFrom('delivered'))).toEqual({ result: 'stale' });
      expect(await store.applyReceipt(providerMessageId, 'failed', receiptFrom('failed'))).toEqual({ result: 'stale' });
      expect((await store.getDelivery(sent.key))?.status).toBe('delivered');
      // a message no attempt recorded changes no delivery (it is kept for one: ./store-contract-receipts.ts)
      expect(await store.applyReceipt('SM-unknown', 'delivered', receiptFrom('delivered'))).toEqual({ result: 'kept' });
    });

    it('an undelivered receipt moves sent → failed', async () => {
      const store = ctx.store();
      const { sent, providerMessageId } = await sentDelivery(store);
      expect(await store.applyReceipt(providerMessageId, 'failed', receiptFrom('failed'))).toMatchObject({
        result: 'applied',
        delivery: { key: sent.key, status: 'failed' },
      });
    });

    it('countDeliveriesSince counts one person’s deliveries created strictly after `since`', async () => {
      const store = ctx.store();
      const userId = randomUUID();
      const start = await store.now();
      const { added } = await withDeliveries(store, 3, userId);
      await withDeliveries(store, 1);
      expect(await store.countDeliveriesSince(userId, at(start, -1))).toBe(3);
      const newest = new Date(Math.max(...added.map((d) => d.createdAt.getTime())));
      expect(await store.countDeliveriesSince(userId, newest)).toBe(0);
      expect(await store.countDeliveriesSince(randomUUID(), at(start, -1))).toBe(0);
    });

    it('deliveryBacklog reports pending deliveries, the oldest due time and dead letters', async () => {
      const store = ctx.store();
      expect(await store.deliveryBacklog()).toEqual({ pending: 0, dead: 0 });
      await withDeliveries(store, 3);
      const [a, b, c] = await store.claimDeliveries(10, LEASE);
      if (!a || !b || !c) throw new Error('claim failed');
      await store.recordAttempt(a.key, 1, { status: 'dead', carrier: 'twilio', error: 'timeout' });
      await store.recordAttempt(b.key, 1, { status: 'sent', carrier: 'twilio', providerMessageId: 'SMb' });
      const later = at(await store.now(), 3_600_000);
      await store.recordAttempt(c.key, 1, { status: 'pending', carrier: 'twilio', error: 'timeout', nextAttemptAt: later });
      // whether a not-yet-due retry reports an oldestDue is left to the adapter
      expect(await store.deliveryBacklog()).toMatchObject({ pending: 1, dead: 1 });
      const { added } = await withDeliveries(store, 2);
      const oldestDue = new Date(Math.min(...added.map((d) => d.nextAttemptAt.getTime())));
      expect(await store.deliveryBacklog()).toEqual({ pending: 3, oldestDue, dead: 1 });
    });
  });
}
