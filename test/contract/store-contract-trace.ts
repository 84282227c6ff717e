/** Contract cases for the trace context a timer and its deliveries carry across the handoff. */
import { describe, expect } from 'vitest';
import { newDeliveries, newTimer, openedIncident, type ContractContext } from './store-contract-helpers.js';

const TIMER_TRACE = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const ESCALATION_TRACE = '00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01';

export function traceCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('trace context', () => {
    it('a timer keeps the traceparent it was armed with through the sweep claim; none when armed without', async () => {
      const store = ctx.store();
      const t = { ...(await newTimer(store, { startOffsetMs: -120_000, expiresInMs: -1_000 })), traceparent: TIMER_TRACE };
      const r = await store.armTimer(t);
      expect(r.kind).toBe('created');
      if (r.kind !== 'created') return;
      expect(r.timer.traceparent).toBe(TIMER_TRACE);
      expect((await store.getTimer(t.id))?.traceparent).toBe(TIMER_TRACE);
      const claimed = await store.claimDueTimers(1000, 1);
      expect(claimed.find((x) => x.id === t.id)?.traceparent).toBe(TIMER_TRACE);
      const plain = await store.armTimer(await newTimer(store));
      expect(plain.kind === 'created' && !('traceparent' in plain.timer)).toBe(true);
    });

    it('a delivery keeps the traceparent it was queued with through the dispatcher claim; none when queued without', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      const [traced, plain] = newDeliveries(incident.id, 2);
      if (!traced || !plain) throw new Error('no deliveries');
      const added = await store.addDeliveries(incident, [{ ...traced, traceparent: ESCALATION_TRACE }, plain]);
      expect(added.find((d) => d.key === traced.key)?.traceparent).toBe(ESCALATION_TRACE);
      expect(added.find((d) => d.key === plain.key)).not.toHaveProperty('traceparent');
      const claimed = await store.claimDeliveries(100, 60_000);
      expect(claimed.find((d) => d.key === traced.key)?.traceparent).toBe(ESCALATION_TRACE);
      expect(claimed.find((d) => d.key === plain.key)).not.toHaveProperty('traceparent');
    });
  });
}
