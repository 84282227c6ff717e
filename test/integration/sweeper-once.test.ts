/**
 * The repairs and warnings that are not per timer (all-clears, panic texts, the warning
 * claim) run at most every `onceEveryMs` on the sweeps the scheduler starts, and on every
 * sweep called by hand; a sweep that skips them still claims and escalates what is due.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { tempSqliteStore, type TempSqliteStore } from '../helpers/sqlite-store.js';
import { armDue } from '../helpers/sweep-suite.js';
import { testWorkers } from '../helpers/workers.js';

const log = createLogger({ level: 'silent' });

describe('sweeper: repairs and warnings of every shard', () => {
  let tmp: TempSqliteStore;
  let store: SqliteStore;

  beforeEach(async () => {
    tmp = await tempSqliteStore();
    store = tmp.store;
  });
  afterEach(async () => {
    await tmp.cleanup();
  });

  function sweeper(onceEveryMs?: number) {
    const runs = { warnings: 0, panics: 0 };
    const metrics = createMetrics({ replica: 't', collectDefault: false });
    const { sweeper: s } = testWorkers(store, {
      metrics,
      log,
      sweep: {
        lockName: 'sweep',
        lockTtlMs: 10_000,
        batchSize: 10,
        maxEscalationAttempts: 5,
        concurrency: 1,
        onceEveryMs,
        warnings: { run: async () => (runs.warnings++, 0) },
        panics: { repair: async () => (runs.panics++, 0) },
      },
    });
    return { s, runs };
  }

  it('scheduled sweeps run them at most every onceEveryMs and still escalate what is due; a sweep by hand always runs them', async () => {
    const { s, runs } = sweeper(60_000);
    expect((await s.sweep({ throttled: true })).outcome).toBe('swept');
    expect(runs).toEqual({ warnings: 1, panics: 1 });

    await armDue(store, 3);
    const skipped = await s.sweep({ throttled: true });
    expect(skipped).toMatchObject({ outcome: 'swept', claimed: 3, escalated: 3 });
    expect(runs).toEqual({ warnings: 1, panics: 1 });

    await s.sweep();
    expect(runs).toEqual({ warnings: 2, panics: 2 });
    await s.sweep({ throttled: true });
    expect(runs).toEqual({ warnings: 2, panics: 2 });
  });

  it('without onceEveryMs every scheduled sweep runs them', async () => {
    const { s, runs } = sweeper();
    for (let i = 0; i < 3; i++) await s.sweep({ throttled: true });
    expect(runs).toEqual({ warnings: 3, panics: 3 });
  });
});
