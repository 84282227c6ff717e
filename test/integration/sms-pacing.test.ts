/**
 * A per-carrier send rate: with `TWILIO_MAX_PER_SECOND=N` (or Fast2SMS's) no window of one
 * second ever holds more than N sends at the carrier, however large the backlog, and the
 * dispatcher claims only what can start within half a lease (no lease lapses in the queue).
 * Real SQLite store and dispatcher; the fake carrier records when each send reached it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deliveryKey } from '../../src/domain/delivery.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { RateLimitedCarrier } from '../../src/sms/rate-limited.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { LatencyCarrier } from '../helpers/recording-carrier.js';
import { tempSqliteStore, type TempSqliteStore } from '../helpers/sqlite-store.js';
import { eventually } from '../helpers/vigil.js';
import { testWorkers } from '../helpers/workers.js';

/** The most sends any window of `windowMs` holds (windows starting at each send: the worst case). */
function busiestWindow(times: number[], windowMs: number): number {
  const t = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < t.length; i++) {
    while (j < t.length && (t[j] as number) < (t[i] as number) + windowMs) j++;
    most = Math.max(most, j - i);
  }
  return most;
}

const log = createLogger({ level: 'silent' });

describe('sms pacing', () => {
  let tmp: TempSqliteStore;
  let store: SqliteStore;
  beforeEach(async () => {
    tmp = await tempSqliteStore();
    store = tmp.store;
  });
  afterEach(async () => {
    await tmp.cleanup();
  });

  it('a carrier limited to N/s never gets more than N sends in any one-second window', async () => {
    const N = 20;
    const fake = new LatencyCarrier(5);
    const limited = new RateLimitedCarrier(fake, N);
    await Promise.all(Array.from({ length: 3 * N }, (_, i) => limited.send({ to: '+14155550100', body: 'x', idempotencyKey: `k${i}` })));
    expect(fake.arrivals).toHaveLength(3 * N);
    expect(busiestWindow(fake.arrivals, 1000)).toBeLessThanOrEqual(N);
    // the limiter paces, it does not starve: 3N sends need about 3 s, not more than a window or two extra
    expect(busiestWindow(fake.arrivals, 1000)).toBeGreaterThanOrEqual(N - 1);
  });

  it('the dispatcher drains a backlog at the carrier rate: every delivery sent once, no window over N, no lease lapsed', async () => {
    const N = 25;
    const total = 60;
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
    await store.addDeliveries(
      incident,
      Array.from({ length: total }, (_, i) => ({
        key: deliveryKey(incident.id, `c${i}`, 'sos'),
        contactId: `c${i}`,
        contactName: `C${i}`,
        phone: `+14155550${String(100 + i)}`,
        kind: 'sos' as const,
        body: 'sos',
      })),
    );
    const fake = new LatencyCarrier(50);
    const limited = new RateLimitedCarrier(fake, N);
    const metrics = createMetrics({ replica: 'pacing', collectDefault: false });
    // a lease of 2 s: claims must stay within what starts in 1 s, or leased deliveries would lapse while queued
    const { dispatcher } = testWorkers(store, {
      carrier: limited,
      metrics,
      log,
      dispatch: { maxInFlight: 500, leaseMs: 2000, retry: { maxAttempts: 3, baseMs: 10, capMs: 20 }, pacing: limited },
    });
    try {
      await eventually(
        async () => {
          await dispatcher.tick();
          const ds = await store.deliveriesFor([incident.id]);
          return ds.every((d) => d.status === 'sent');
        },
        'every delivery sent',
        30_000,
        50,
      );
    } finally {
      await dispatcher.stop();
    }
    const ds = await store.deliveriesFor([incident.id]);
    expect(ds.every((d) => d.attempts === 1 && d.maybeAccepted !== true)).toBe(true);
    expect(fake.arrivals).toHaveLength(total);
    expect(busiestWindow(fake.arrivals, 1000)).toBeLessThanOrEqual(N);
  });
});
