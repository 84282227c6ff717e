/**
 * Issue 35, item 12: a store call that never returns does not stop a replica's texts. A
 * dispatch tick whose claim hangs is abandoned after `stallMs` (counted as a dispatch loop
 * error) and the next tick claims again; a send whose outcome write hangs frees its slot once
 * its lease allows no carrier request and `stallMs` more have passed; `stop()` does not wait
 * for either. The store is a real SQLite store with one call held by a gate that opens only
 * when the test ends.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deliveryKey } from '../../src/domain/delivery.js';
import { createLogger } from '../../src/log.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { Store } from '../../src/store/port.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { Scheduler } from '../../src/worker/scheduler.js';
import { withinMs } from '../helpers/deadline.js';
import { RecordingCarrier } from '../helpers/recording-carrier.js';
import { gate, hookedStore } from '../helpers/slow-store.js';
import { tempSqliteStore, type TempSqliteStore } from '../helpers/sqlite-store.js';
import { eventually } from '../helpers/vigil.js';
import { testWorkers } from '../helpers/workers.js';

const log = createLogger({ level: 'silent' });
const STALL_MS = 300;

/** An incident with one pending SOS delivery per contact id, due now. */
async function seed(store: Store, contacts: string[]): Promise<string[]> {
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
  const list = contacts.map((c, i) => ({
    key: deliveryKey(incident.id, c, 'sos'),
    contactId: c,
    contactName: c,
    phone: `+1415555010${i}`,
    kind: 'sos' as const,
    body: 'sos',
  }));
  return (await store.addDeliveries(incident, list)).map((d) => d.key);
}

/** The store call `name` hangs the first time (until `release()`), answers at once afterwards. */
function hangsOnce(store: Store, name: 'claimDeliveries' | 'recordAttempts') {
  const held = gate();
  let calls = 0;
  return {
    store: hookedStore(store, { [name]: () => (calls++ === 0 ? held.wait() : Promise.resolve()) }),
    reached: held.reached,
    release: held.open,
  };
}

const dispatchErrors = async (metrics: Metrics) =>
  (await metrics.loopErrors.get()).values.find((v) => v.labels.loop === 'dispatch')?.value ?? 0;

describe('dispatcher stall guard', () => {
  let tmp: TempSqliteStore;
  let store: SqliteStore;
  let release: () => void = () => undefined;

  beforeEach(async () => {
    tmp = await tempSqliteStore();
    store = tmp.store;
  });
  afterEach(async () => {
    release();
    await tmp.cleanup();
  });

  it('a tick whose claim never answers is abandoned after stallMs and counted; the next tick claims and sends', async () => {
    const [key] = await seed(store, ['c0']);
    const hang = hangsOnce(store, 'claimDeliveries');
    release = hang.release;
    const carrier = new RecordingCarrier();
    const metrics = createMetrics({ replica: 't', collectDefault: false });
    const { dispatcher } = testWorkers(store, {
      carrier,
      metrics,
      log,
      dispatch: { stallMs: STALL_MS },
      overrides: { dispatcherStore: hang.store },
    });

    const stuck = dispatcher.tick();
    await hang.reached;
    expect(await withinMs(stuck, 10_000, 'the tick whose claim hangs')).toBe(0);
    expect(await dispatchErrors(metrics)).toBe(1);

    expect(await dispatcher.tick()).toBe(1);
    await dispatcher.drain();
    expect(carrier.sent.map((s) => s.idempotencyKey)).toEqual([key]);
    expect(await store.getDelivery(key!)).toMatchObject({ status: 'sent', attempts: 1 });
    // stop() does not wait for the claim that still hangs
    await withinMs(dispatcher.stop(), 10_000, 'stop() with a claim still hanging');
  });

  it('on the scheduler: the cron dispatch tick goes on after a hung claim and the text goes out', async () => {
    const [key] = await seed(store, ['c0']);
    const hang = hangsOnce(store, 'claimDeliveries');
    release = hang.release;
    const carrier = new RecordingCarrier();
    const metrics = createMetrics({ replica: 't', collectDefault: false });
    const { sweeper, dispatcher } = testWorkers(store, {
      carrier,
      metrics,
      log,
      dispatch: { stallMs: STALL_MS },
      overrides: { dispatcherStore: hang.store },
    });
    // node-cron's noOverlap skips every tick while one runs: a tick that never ends would stop them all
    const scheduler = new Scheduler(sweeper, dispatcher, metrics, log, '* * * * * *');
    scheduler.start();
    try {
      await hang.reached;
      await eventually(async () => (await store.getDelivery(key!))?.status === 'sent', 'the text sent by a later tick', 10_000);
      expect(carrier.sent).toHaveLength(1);
      expect(await dispatchErrors(metrics)).toBeGreaterThanOrEqual(1);
    } finally {
      await withinMs(scheduler.stop(), 10_000, 'scheduler stop() with a claim still hanging');
    }
  });

  it('a send whose outcome write never answers frees its slot once its lease is spent; the next text goes out', async () => {
    const keys = await seed(store, ['c0', 'c1']);
    const hang = hangsOnce(store, 'recordAttempts');
    release = hang.release;
    const carrier = new RecordingCarrier();
    const metrics = createMetrics({ replica: 't', collectDefault: false });
    const leaseMs = 1000;
    const { dispatcher } = testWorkers(store, {
      carrier,
      metrics,
      log,
      dispatch: { maxInFlight: 1, leaseMs, stallMs: STALL_MS },
      overrides: { dispatcherStore: hang.store },
    });

    expect(await dispatcher.tick()).toBe(1);
    await hang.reached; // the one slot's outcome write hangs
    expect(await dispatcher.tick()).toBe(0); // no free slot yet
    // once the slot is freed another text is claimed and sent (the other one, or the first again after its lease lapsed)
    await eventually(async () => (await dispatcher.tick()) > 0 || carrier.sent.length > 1, 'a second send on the one slot', 10_000, 50);
    await eventually(
      async () => {
        const got = await Promise.all(keys.map((k) => store.getDelivery(k)));
        return got.some((d) => d?.status === 'sent');
      },
      'a recorded send',
      10_000,
    );
    expect(carrier.sent.length).toBeGreaterThanOrEqual(2);
    expect(await dispatchErrors(metrics)).toBeGreaterThanOrEqual(1);
    await withinMs(dispatcher.stop(), 10_000, 'stop() with an outcome write still hanging');
  });
});
