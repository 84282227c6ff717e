/**
 * The sweeper, escalator and dispatcher wired as the composition root wires them
 * (`buildWorkers`, src/compose/workers.ts), with what a test seldom cares about filled in: a
 * silent log, fresh metrics, no events, the default SMS caps, an in-process lock, a carrier
 * that accepts every text, small sweep and dispatch settings. A test passes what it needs;
 * a special piece (a slow store in front of one worker, a fixed jitter) goes in `overrides`.
 */
import { SmsBudget } from '../../src/app/sms-budget.js';
import { buildWorkers, type WorkerOverrides, type WorkerPorts, type WorkerSettings, type Workers } from '../../src/compose/workers.js';
import { InProcessLock } from '../../src/lock/in-process-lock.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import type { Store } from '../../src/store/port.js';
import type { SweepSettings } from '../../src/worker/sweeper.js';
import { RecordingCarrier } from './recording-carrier.js';

export interface TestWorkerOptions extends Partial<Omit<WorkerPorts, 'store'>> {
  sweep?: Partial<SweepSettings>;
  dispatch?: Partial<WorkerSettings['dispatch']>;
  escalation?: WorkerSettings['escalation'];
  holdTexts?: WorkerSettings['holdTexts'];
  overrides?: WorkerOverrides;
}

export function testWorkers(store: Store, o: TestWorkerOptions = {}): Workers {
  const log = o.log ?? createLogger({ level: 'silent' });
  const metrics = o.metrics ?? createMetrics({ replica: 't', collectDefault: false });
  const ports: WorkerPorts = {
    store,
    lock: o.lock ?? new InProcessLock(),
    carrier: o.carrier ?? new RecordingCarrier(),
    metrics,
    log,
    events: o.events ?? { publish() {} },
    smsBudget: o.smsBudget ?? new SmsBudget(store, { maxPerIncident: 12, maxPerUserPerDay: 60 }, { log }),
    tracing: o.tracing,
  };
  const settings: WorkerSettings = {
    sweep: { lockName: 'sweep', lockTtlMs: 10_000, batchSize: 10, concurrency: 1, maxEscalationAttempts: 5, ...o.sweep },
    dispatch: { maxInFlight: 10, leaseMs: 30_000, retry: { maxAttempts: 3, baseMs: 10, capMs: 20 }, ...o.dispatch },
    escalation: o.escalation,
    holdTexts: o.holdTexts,
  };
  return buildWorkers(ports, settings, o.overrides);
}
