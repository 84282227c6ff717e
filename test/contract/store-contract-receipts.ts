/**
 * Contract cases for carrier receipts against the attempt they are about: a receipt moves a
 * delivery only while its message is the delivery's current one (a resend or a re-claimed
 * lease sends another), and one that arrives before its attempt is recorded is kept and
 * applied by the write that records it, also when the two race.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect } from 'vitest';
import { EARLY_RECEIPT_KEEP_MS, receiptFrom, type Delivery } from '../../src/domain/delivery.js';
import type { ReceiptStatus, Store } from '../../src/store/port.js';
import { at, newDeliveries, openedIncident, Split, type ContractContext } from './store-contract-helpers.js';

const LEASE = 60_000;

const sid = () => `SM${randomUUID().replace(/-/g, '')}`;
const receipt = (store: Store, pid: string, to: ReceiptStatus) => store.applyReceipt(pid, to, receiptFrom(to));
const sent = (providerMessageId: string) => ({ status: 'sent' as const, carrier: 'twilio', providerMessageId });

/** `n` SOS deliveries of a fresh incident, claimed (attempt 1, leased for `leaseMs`). */
async function claimed(store: Store, n: number, leaseMs = LEASE): Promise<Delivery[]> {
  const { incident } = await openedIncident(store);
  await store.addDeliveries(incident, newDeliveries(incident.id, n));
  const out = await store.claimDeliveries(n, leaseMs);
  if (out.length !== n) throw new Error(`claimed ${out.length} of ${n}`);
  return out;
}

export function receiptCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('receipts', () => {
    it('a resend makes the message sent before an earlier one: its late receipts never move the new attempt', async () => {
      const store = ctx.store();
      const [d] = await claimed(store, 1);
      const [a, b] = [sid(), sid()];
      await store.recordAttempt(d!.key, 1, sent(a));
      expect(await receipt(store, a, 'failed')).toMatchObject({ result: 'applied', delivery: { status: 'failed' } });

      const resent = await store.resendDelivery(d!.key, 'mod-ann');
      expect(resent).toMatchObject({ status: 'pending', earlierMessageIds: [a] });
      expect(resent?.providerMessageId).toBeUndefined();
      const [again] = await store.claimDeliveries(10, LEASE);
      expect(again).toMatchObject({ key: d!.key, status: 'sending', attempts: 1 });

      // Twilio's late word on the first message, while the resend is with the carrier
      for (const to of ['delivered', 'sent', 'failed'] as const) expect((await receipt(store, a, to)).result).not.toBe('applied');
      expect((await store.getDelivery(d!.key))?.status).toBe('sending');
      // so the resend's own outcome is recorded, and only its own receipt moves it
      expect(await store.recordAttempt(d!.key, 1, sent(b))).toMatchObject({ status: 'sent', providerMessageId: b, earlierMessageIds: [a] });
      expect((await receipt(store, a, 'delivered')).result).not.toBe('applied');
      expect((await store.getDelivery(d!.key))?.status).toBe('sent');
      expect(await receipt(store, b, 'failed')).toMatchObject({ result: 'applied', delivery: { status: 'failed', providerMessageId: b } });

      // a second resend keeps both earlier messages, oldest first
      expect(await store.resendDelivery(d!.key, 'mod-ann')).toMatchObject({ status: 'pending', earlierMessageIds: [a, b] });
      expect((await receipt(store, b, 'delivered')).result).not.toBe('applied');
      expect((await store.getDelivery(d!.key))?.status).toBe('pending');
    });

    it('an early receipt is kept and applied by the write that records its attempt; repeats change nothing', async () => {
      const store = ctx.store();
      const [d] = await claimed(store, 1);
      const b = sid();
      // before the outcome is written: kept, the furthest status wins, a late `sent` does not take it back
      expect(await receipt(store, b, 'sent')).toEqual({ result: 'kept' });
      expect(await receipt(store, b, 'delivered')).toEqual({ result: 'kept' });
      expect(await receipt(store, b, 'sent')).toEqual({ result: 'kept' });
      expect((await store.getDelivery(d!.key))?.status).toBe('sending');

      const recorded = await store.recordAttempt(d!.key, 1, sent(b));
      expect(recorded).toMatchObject({ status: 'delivered', providerMessageId: b, attempts: 1 });
      expect(await store.getDelivery(d!.key)).toEqual(recorded);
      for (const to of ['delivered', 'sent', 'failed'] as const) expect(await receipt(store, b, to)).toEqual({ result: 'stale' });
      expect(await store.getDelivery(d!.key)).toEqual(recorded);
    });

    it('the receipt of a lost lease’s message never moves the attempt that re-claimed it', async () => {
      const store = ctx.store();
      const [first] = await claimed(store, 1, 50);
      await ctx.passTime(at(first!.leaseUntil!, 70));
      const [second] = await store.claimDeliveries(10, LEASE);
      expect(second).toMatchObject({ key: first!.key, attempts: 2 });
      const [lost, kept, other] = [sid(), sid(), sid()];
      // the first dispatcher's message is reported, then its outcome comes too late to record
      expect(await receipt(store, lost, 'delivered')).toEqual({ result: 'kept' });
      expect(await store.recordAttempt(first!.key, 1, sent(lost))).toBeNull();
      // the second attempt's early receipt is the one applied with its outcome
      expect(await receipt(store, kept, 'sent')).toEqual({ result: 'kept' });
      expect(await receipt(store, other, 'failed')).toEqual({ result: 'kept' });
      expect(await store.recordAttempt(first!.key, 2, sent(kept))).toMatchObject({ status: 'sent', providerMessageId: kept });
      expect((await receipt(store, lost, 'failed')).result).not.toBe('applied');
      expect(await store.getDelivery(first!.key)).toMatchObject({ status: 'sent', providerMessageId: kept });
    });

    it('recordAttempts applies the early receipt of each message it records to that message’s delivery only', async () => {
      const store = ctx.store();
      const ds = await claimed(store, 4);
      const pids = ds.map(() => sid());
      await receipt(store, pids[0]!, 'delivered');
      await receipt(store, pids[1]!, 'failed');
      await receipt(store, pids[3]!, 'delivered'); // its attempt ends in a retry: no message recorded
      const out = await store.recordAttempts([
        { key: ds[0]!.key, attempt: 1, outcome: sent(pids[0]!) },
        { key: ds[1]!.key, attempt: 1, outcome: sent(pids[1]!) },
        { key: ds[2]!.key, attempt: 1, outcome: sent(pids[2]!) },
        {
          key: ds[3]!.key,
          attempt: 1,
          outcome: { status: 'pending', carrier: 'twilio', error: 'timeout', nextAttemptAt: at(new Date(), 60_000) },
        },
      ]);
      expect(out.map((d) => d?.status)).toEqual(['delivered', 'failed', 'sent', 'pending']);
      for (const [i, d] of out.entries()) expect(await store.getDelivery(ds[i]!.key)).toEqual(d);
      expect(await receipt(store, pids[0]!, 'delivered')).toEqual({ result: 'stale' });
    });

    it('an early receipt is kept for EARLY_RECEIPT_KEEP_MS at most', async () => {
      const store = ctx.store();
      const [d] = await claimed(store, 1, 2 * EARLY_RECEIPT_KEEP_MS);
      const b = sid();
      expect(await receipt(store, b, 'delivered')).toEqual({ result: 'kept' });
      await ctx.passTime(at(await store.now(), EARLY_RECEIPT_KEEP_MS));
      expect(await store.recordAttempt(d!.key, 1, sent(b))).toMatchObject({ status: 'sent', providerMessageId: b });
    });

    it('a receipt racing the write of its attempt’s outcome is applied whichever lands first (many trials)', async () => {
      const [store, peer] = [ctx.store(), await ctx.peer()];
      const split = new Split(ctx, 'outcome written first (the receipt moves it) vs receipt first (kept, applied with the outcome)');
      // on its own thread: 200 trials, up to 5 × as many until both orders happened (Split.trials). In this
      // thread (an async driver: the calls interleave at the server) fewer, each a few round trips long, and the
      // outcome's one write starts after a random part of the receipt's several (else it always lands first)
      const min = peer.ownThread ? 200 : 50;
      const jitterMs = async () => (peer.ownThread ? undefined : sleep(Math.random() * 150));
      const ds = await claimed(store, 5 * min);
      let i = 0;
      await split.trials(peer, min, async () => {
        const d = ds[i++];
        if (!d) throw new Error('out of claimed deliveries');
        const pid = sid();
        const record = async () => (await jitterMs(), store.recordAttempt(d.key, d.attempts, sent(pid)));
        const [recorded, result] = await peer.race(record, 'applyReceipt', {
          pid,
          to: 'delivered',
        });
        expect(recorded?.providerMessageId).toBe(pid);
        expect(result).not.toBe('stale');
        expect(await store.getDelivery(d.key)).toMatchObject({ status: 'delivered', providerMessageId: pid });
        if (recorded?.status === 'sent') split.mine++;
        else split.theirs++;
      });
    }, 120_000);
  });
}
