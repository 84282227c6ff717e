/**
 * A repair that keeps failing never stops the SOS: the sweep claims and escalates due timers
 * first, then runs the repairs that are not per timer (all-clears, panic texts) and the
 * warnings, each on its own, so that one throwing (its read of pending work included) stops
 * neither the claim nor the others. Real SQLite; the failing read is the real store with one
 * method replaced.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PanicService } from '../../src/app/panic.js';
import { SmsBudget } from '../../src/app/sms-budget.js';
import { createLogger } from '../../src/log.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { Store } from '../../src/store/port.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { tempSqliteStore, type TempSqliteStore } from '../helpers/sqlite-store.js';
import { armDue } from '../helpers/sweep-suite.js';
import { testWorkers } from '../helpers/workers.js';

const log = createLogger({ level: 'silent' });

/** The store with `method` always throwing. */
function broken(store: Store, method: keyof Store): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === method)
        return async () => {
          throw new Error(`injected: ${String(method)} keeps failing`);
        };
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

async function sweepErrors(metrics: Metrics): Promise<number> {
  const m = /^vigil_loop_errors_total\{[^}]*loop="sweep"[^}]*\} (\S+)$/m.exec(await metrics.registry.metrics());
  return m ? Number(m[1]) : 0;
}

describe('sweep: a failing repair never stops claiming', () => {
  let tmp: TempSqliteStore;
  let store: SqliteStore;

  beforeEach(async () => {
    tmp = await tempSqliteStore();
    store = tmp.store;
  });
  afterEach(async () => {
    await tmp.cleanup();
  });

  /** A sweeper over `sweepStore`, with the panic repair over `panicStore` (the real service) and a counted warning run. */
  function sweeper(sweepStore: Store, panicStore: Store) {
    const metrics = createMetrics({ replica: 't', collectDefault: false });
    const smsBudget = new SmsBudget(panicStore, { maxPerIncident: 12, maxPerUserPerDay: 60 }, { log });
    const panics = new PanicService(panicStore, { publish() {} }, metrics, smsBudget);
    const runs = { warnings: 0 };
    const { sweeper: s } = testWorkers(sweepStore, {
      metrics,
      log,
      sweep: { onceEveryMs: 0, panics, warnings: { run: async () => (runs.warnings++, 0) } },
    });
    return { s, metrics, runs };
  }

  /** Three scheduled sweeps, each with a fresh due timer: every one is claimed and escalated. */
  async function everySweepEscalates(s: ReturnType<typeof sweeper>['s']): Promise<void> {
    for (let i = 0; i < 3; i++) {
      const [id] = await armDue(store, 1);
      const r = await s.sweep({ throttled: true });
      expect(r, `sweep ${i}`).toMatchObject({ outcome: 'swept', claimed: 1, escalated: 1, failed: 0 });
      expect(await store.getTimer(id as string)).toMatchObject({ status: 'expired', escalation: 'done' });
      expect(await store.incidentForTimer(id as string)).not.toBeNull();
    }
  }

  it('pendingAllClears always throws: due timers still escalate on every sweep; the panic repair and the warnings still run', async () => {
    const { s, metrics, runs } = sweeper(broken(store, 'pendingAllClears'), store);
    await everySweepEscalates(s);
    expect(runs.warnings).toBe(3);
    expect(await sweepErrors(metrics)).toBe(3);
  });

  it('pendingPanicTexts always throws: due timers still escalate on every sweep; the warnings still run', async () => {
    const { s, metrics, runs } = sweeper(store, broken(store, 'pendingPanicTexts'));
    await everySweepEscalates(s);
    expect(runs.warnings).toBe(3);
    expect(await sweepErrors(metrics)).toBe(3);
  });

  it('the panic repair itself throwing (not only its read) is caught by the sweep too', async () => {
    const metrics = createMetrics({ replica: 't', collectDefault: false });
    const { sweeper: s } = testWorkers(store, {
      metrics,
      log,
      sweep: {
        onceEveryMs: 0,
        panics: {
          repair: async () => {
            throw new Error('injected: the panic repair throws');
          },
        },
      },
    });
    await everySweepEscalates(s);
    expect(await sweepErrors(metrics)).toBe(3);
  });

  it('pendingEscalations always throws: due timers are still claimed and escalated', async () => {
    const { s, metrics } = sweeper(broken(store, 'pendingEscalations'), store);
    await everySweepEscalates(s);
    expect(await sweepErrors(metrics)).toBe(3);
  });

  it('a claim that fails fails the sweep, after the repairs and warnings had their turn', async () => {
    const { s, runs } = sweeper(broken(store, 'claimDueTimers'), store);
    await armDue(store, 1);
    expect((await s.sweep({ throttled: true })).outcome).toBe('failed');
    expect(runs.warnings).toBe(1);
  });
});
