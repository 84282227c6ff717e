/**
 * Shutdown never starts a send the store cannot record: stopping the ticks waits for the
 * dispatch tick that is claiming right now and for its sends, and no tick runs after it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deliveryKey, type AttemptResult } from '../../src/domain/delivery.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import type { Carrier, OutgoingSms } from '../../src/sms/port.js';
import type { Store } from '../../src/store/port.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { Scheduler } from '../../src/worker/scheduler.js';
import { gate, hookedStore } from '../helpers/slow-store.js';
import { tempSqliteStore, type TempSqliteStore } from '../helpers/sqlite-store.js';
import { testWorkers } from '../helpers/workers.js';

/** Records when each send started and ended (performance.now()). */
class RecordingCarrier implements Carrier {
  readonly name = 'recording';
  readonly calls: { key: string; startedAt: number; endedAt?: number }[] = [];
  async send(sms: OutgoingSms): Promise<AttemptResult> {
    const call: { key: string; startedAt: number; endedAt?: number } = { key: sms.idempotencyKey, startedAt: performance.now() };
    this.calls.push(call);
    await new Promise((r) => setTimeout(r, 100));
    call.endedAt = performance.now();
    return { ok: true, carrier: this.name, providerMessageId: `rec:${sms.idempotencyKey}` };
  }
}

const log = createLogger({ level: 'silent' });
const settings = { maxInFlight: 10, leaseMs: 30_000, retry: { maxAttempts: 3, baseMs: 10, capMs: 20 } };

/** An incident with `n` pending deliveries, due now. */
async function seedDeliveries(store: Store, n: number): Promise<string[]> {
  const now = await store.now();
  const armed = await store.armTimer({
    id: 'tm-1',
    userId: 'u-1',
    startedAt: new Date(now.getTime() - 60_000),
    expiresAt: new Date(now.getTime() - 1),
  });
  if (armed.kind !== 'created') throw new Error(armed.kind);
  const [timer] = await store.claimDueTimers(1, 1);
  const { incident } = await store.openIncident(timer!, 1, 'inc-1');
  const list = Array.from({ length: n }, (_, i) => ({
    key: deliveryKey(incident.id, `c${i}`, 'sos'),
    contactId: `c${i}`,
    contactName: `C${i}`,
    phone: `+1415555010${i}`,
    kind: 'sos' as const,
    body: 'sos',
  }));
  return (await store.addDeliveries(incident, list)).map((d) => d.key);
}

describe('dispatcher stop', () => {
  let tmp: TempSqliteStore;
  let store: SqliteStore;

  beforeEach(async () => {
    tmp = await tempSqliteStore();
    store = tmp.store;
  });
  afterEach(async () => {
    await tmp.cleanup();
  });

  it('stop() waits for the tick that is claiming and its sends; every outcome is recorded before it resolves and no tick runs after it', async () => {
    const keys = await seedDeliveries(store, 3);
    const claiming = gate();
    const carrier = new RecordingCarrier();
    const metrics = createMetrics({ replica: 't', collectDefault: false });
    const { dispatcher } = testWorkers(store, {
      carrier,
      metrics,
      log,
      dispatch: settings,
      overrides: { dispatcherStore: hookedStore(store, { claimDeliveries: claiming.wait }) },
    });

    const tick = dispatcher.tick();
    await claiming.reached;
    const stopping = dispatcher.stop().then(() => performance.now());
    setTimeout(claiming.open, 200); // a slow store: the claim answers after stop() was called
    const stoppedAt = await stopping;

    expect(await tick).toBe(3);
    expect(carrier.calls).toHaveLength(3);
    for (const c of carrier.calls) expect(c.endedAt).toBeLessThanOrEqual(stoppedAt);
    for (const key of keys) expect(await store.getDelivery(key)).toMatchObject({ status: 'sent', attempts: 1 });

    // due again, but the dispatcher is stopped: nothing is claimed or sent
    const more = await seedMore(store);
    expect(await dispatcher.tick()).toBe(0);
    expect(carrier.calls).toHaveLength(3);
    expect(await store.getDelivery(more)).toMatchObject({ status: 'pending', attempts: 0 });
  });

  it('the scheduler stop waits for a running dispatch tick: no send starts after it resolved (the store closes next)', async () => {
    await seedDeliveries(store, 2);
    const claiming = gate();
    const carrier = new RecordingCarrier();
    const metrics = createMetrics({ replica: 't', collectDefault: false });
    const slow = hookedStore(store, { claimDeliveries: claiming.wait });
    const { sweeper, dispatcher } = testWorkers(store, {
      carrier,
      metrics,
      log,
      sweep: { lockName: 'sweep', lockTtlMs: 10_000, batchSize: 10, maxEscalationAttempts: 5, concurrency: 2 },
      dispatch: settings,
      overrides: { dispatcherStore: slow },
    });
    const scheduler = new Scheduler(sweeper, dispatcher, metrics, log, '* * * * * *');
    scheduler.start();
    await claiming.reached; // a dispatch tick is inside claimDeliveries
    const stopping = scheduler.stop().then(() => performance.now());
    setTimeout(claiming.open, 200); // a slow store: the claim answers after stop() was called
    const stoppedAt = await stopping;
    expect(carrier.calls).toHaveLength(2);
    for (const c of carrier.calls) {
      expect(c.startedAt).toBeLessThan(stoppedAt);
      expect(c.endedAt).toBeLessThanOrEqual(stoppedAt);
    }
    expect((await store.deliveryBacklog()).pending).toBe(0);
  });
});

async function seedMore(store: Store): Promise<string> {
  const incident = (await store.getIncident('inc-1'))!;
  const key = deliveryKey(incident.id, 'late', 'sos');
  await store.addDeliveries(incident, [{ key, contactId: 'late', contactName: 'Late', phone: '+14155550199', kind: 'sos', body: 'sos' }]);
  return key;
}
