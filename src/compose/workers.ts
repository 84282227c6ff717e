/**
 * The one wiring of the sweep, escalation and dispatch: the escalator the sweeper escalates
 * with, the dispatcher holding texts back while a sweep escalates a backlog. The composition
 * root builds them here from config (`workerSettings`); tests build them here too, with
 * their own settings and, where a case needs one, a special piece (`WorkerOverrides`).
 */
import type { Logger } from 'pino';
import type { SmsBudget } from '../app/sms-budget.js';
import type { Config } from '../config.js';
import type { Lock } from '../lock/port.js';
import type { Metrics } from '../metrics.js';
import type { EventPublisher } from '../realtime/events.js';
import type { Carrier } from '../sms/port.js';
import type { Store } from '../store/port.js';
import type { Tracing } from '../telemetry/tracing.js';
import { Dispatcher, type DispatchSettings } from '../worker/dispatcher.js';
import { Escalator, type EscalationExtras } from '../worker/escalator.js';
import { SweepBacklog, type BacklogSettings } from '../worker/sweep-backlog.js';
import { Sweeper, type SweepSettings } from '../worker/sweeper.js';
import { SWEEP_BEHIND_MS, SWEEP_BEHIND_READ_MS, SWEEP_ONCE_EVERY_MS, TEXTS_HELD_MAX_MS } from './tuning.js';

export interface WorkerPorts {
  store: Store;
  lock: Lock;
  carrier: Carrier;
  metrics: Metrics;
  log: Logger;
  /** the events of escalations and sends (the composition root: the one that also stores a timer's buffered fixes when it ends) */
  events: EventPublisher;
  /** the SMS caps, shared with the timer service (its all-clears count against the same caps) */
  smsBudget: SmsBudget;
  /** an escalation continues the trace of the request that armed the timer; a send the one of its delivery */
  tracing?: Tracing;
}

export interface WorkerSettings {
  sweep: SweepSettings;
  dispatch: Omit<DispatchSettings, 'tracing' | 'yieldTo' | 'yieldMaxMs'>;
  escalation?: EscalationExtras;
  /**
   * Hold texts back while a sweep escalates a backlog, for at most `maxMs` (Dispatcher
   * `yieldTo`): this replica's sweep (it claimed a full batch) and, with `backlog`, any
   * replica's (read from the store: SweepBacklog). Absent: texts are never held back.
   */
  holdTexts?: { maxMs: number; backlog?: BacklogSettings };
}

/** A special piece for a test: a slower or faulty store in front of one worker, a fixed jitter. */
export interface WorkerOverrides {
  escalatorStore?: Store;
  dispatcherStore?: Store;
  /** the retry jitter (default Math.random) */
  random?: () => number;
}

export interface Workers {
  escalator: Escalator;
  sweeper: Sweeper;
  dispatcher: Dispatcher;
}

export function buildWorkers(ports: WorkerPorts, settings: WorkerSettings, o: WorkerOverrides = {}): Workers {
  const { store, lock, carrier, metrics, log, events, smsBudget, tracing } = ports;
  const escalator = new Escalator(o.escalatorStore ?? store, events, metrics, log, smsBudget, tracing, settings.escalation);
  const sweeper = new Sweeper(store, lock, escalator, metrics, log, settings.sweep);
  const hold = settings.holdTexts;
  const backlog = hold?.backlog ? new SweepBacklog(store, hold.backlog) : undefined;
  const dispatcher = new Dispatcher(
    o.dispatcherStore ?? store,
    carrier,
    events,
    metrics,
    log,
    {
      ...settings.dispatch,
      tracing,
      ...(hold && {
        // a burst: incidents first (one writer, one event loop), then its texts
        yieldTo: backlog ? () => sweeper.escalatingBacklog() || backlog.behind() : () => sweeper.escalatingBacklog(),
        yieldMaxMs: hold.maxMs,
      }),
    },
    o.random,
  );
  return { escalator, sweeper, dispatcher };
}

/** The pieces of the workers the composition root builds elsewhere (they serve the API too). */
export type WorkerParts = Pick<SweepSettings, 'warnings' | 'panics'> &
  Pick<DispatchSettings, 'pacing' | 'onSosSent' | 'onUnreachable'> & { location?: EscalationExtras['location'] };

/** The workers' settings as config and the tuning constants say. */
export function workerSettings(config: Config, parts: WorkerParts): WorkerSettings {
  const { sweep, delivery } = config;
  return {
    sweep: {
      lockName: sweep.lockName,
      lockTtlMs: sweep.lockTtlMs,
      batchSize: sweep.batchSize,
      shards: sweep.shards,
      // better-sqlite3 is synchronous: concurrent groups would only run back to back in one turn of the event loop
      concurrency: config.mongodbUri ? sweep.concurrency : 1,
      maxEscalationAttempts: config.escalationMaxAttempts,
      graceMs: config.warning.graceMs,
      panics: parts.panics,
      warnings: parts.warnings,
      onceEveryMs: SWEEP_ONCE_EVERY_MS,
      // under a steady load a sweep starts at every deadline: keep the lease for the next one
      keepLeaseMs: sweep.keepLeaseMs,
    },
    dispatch: {
      maxInFlight: delivery.maxInFlight,
      leaseMs: delivery.leaseMs,
      retry: { maxAttempts: delivery.maxAttempts, baseMs: delivery.baseMs, capMs: delivery.capMs },
      pacing: parts.pacing,
      onSosSent: parts.onSosSent,
      onUnreachable: parts.onUnreachable,
    },
    escalation: {
      location: parts.location,
      includeMeeting: config.location.sosIncludeMeeting,
      duressTextsContacts: config.duress.textContacts,
    },
    holdTexts: {
      maxMs: TEXTS_HELD_MAX_MS,
      // any replica's sweep behind, seen by every replica through the store
      backlog: { behindMs: SWEEP_BEHIND_MS + config.warning.graceMs, refreshMs: SWEEP_BEHIND_READ_MS },
    },
  };
}
