/**
 * A burst escalates before its texts go out: while this replica's sweep escalates a backlog
 * (its claims come back full), the dispatcher claims no new texts, then sends every one.
 * With SQLite one writer and one event loop serve both; sharing them made a 10,000 burst's
 * last incident about a second later (docs/sms.md, "Send rate"). Real SQLite store, sweeper,
 * escalator and dispatcher; the fake carrier records when each send arrived.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { LatencyCarrier } from '../helpers/recording-carrier.js';
import { tempSqliteStore, type TempSqliteStore } from '../helpers/sqlite-store.js';
import { eventually } from '../helpers/vigil.js';
import { testWorkers } from '../helpers/workers.js';

const log = createLogger({ level: 'silent' });
const TIMERS = 600;

describe('escalation first, then texts', () => {
  let tmp: TempSqliteStore;
  let store: SqliteStore;
  beforeEach(async () => {
    tmp = await tempSqliteStore();
    store = tmp.store;
    const now = await store.now();
    for (let i = 0; i < TIMERS; i++) {
      await store.replaceContacts(`u${i}`, [{ id: `c${i}`, name: 'C', phone: '+14155550100' }]);
      await store.armTimer({
        id: `t${i}`,
        userId: `u${i}`,
        startedAt: new Date(now.getTime() - 60_000),
        expiresAt: new Date(now.getTime() - 1),
      });
    }
  });
  afterEach(async () => {
    await tmp.cleanup();
  });

  /** Sweep the backlog while the dispatcher ticks on every turn of the event loop; when each side worked. */
  async function burst(maxYieldMs: number) {
    const metrics = createMetrics({ replica: 't', collectDefault: false });
    const carrier = new LatencyCarrier(5);
    const { sweeper, dispatcher } = testWorkers(store, {
      carrier,
      metrics,
      log,
      sweep: { lockName: 'sweep', lockTtlMs: 60_000, batchSize: 100, groupSize: 25, concurrency: 1, maxEscalationAttempts: 5 },
      dispatch: { maxInFlight: 64, leaseMs: 30_000, retry: { maxAttempts: 6, baseMs: 1000, capMs: 10_000 } },
      // this replica's sweep only (no SweepBacklog)
      holdTexts: { maxMs: maxYieldMs },
    });
    let sweeping = true;
    const ticking = (async () => {
      while (sweeping) {
        await dispatcher.tick();
        await nextTurn();
      }
    })();
    const report = await sweeper.sweep();
    const sweepEnded = performance.now();
    sweeping = false;
    await ticking;
    expect(report.escalated).toBe(TIMERS);
    const sentDuringSweep = carrier.arrivals.filter((t) => t < sweepEnded).length;
    // then every text goes out (a few ticks)
    await eventually(
      async () => {
        await dispatcher.tick();
        return carrier.arrivals.length >= TIMERS;
      },
      'every text sent',
      60_000,
    ).catch(async (err: unknown) => {
      console.log(await store.deliveryBacklog(), carrier.arrivals.length);
      throw err;
    });
    await dispatcher.stop();
    return { sentDuringSweep, sent: carrier.arrivals.length };
  }

  it('while the sweep escalates a backlog no text is claimed; after it, every text is sent once', async () => {
    const r = await burst(60_000);
    expect(r.sentDuringSweep).toBe(0);
    expect(r.sent).toBe(TIMERS);
    expect((await store.deliveryBacklog()).pending).toBe(0);
  });

  it('the wait is bounded: with a bound of 0 ms texts go out during the sweep (the check above can fail)', async () => {
    const r = await burst(0);
    expect(r.sentDuringSweep).toBeGreaterThan(0);
    expect(r.sent).toBe(TIMERS);
  });
});
