/** The sweep, its lock and the escalations it makes. */
import client from 'prom-client';
import { labelledCounter } from './labelled.js';

/** Buckets from "at once" to "the on-call should look": deadline → incident. */
export const LAG_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 45, 60, 120];

export function sweepMetrics(r: client.Registry[]) {
  return {
    sweepDuration: new client.Histogram({
      name: 'vigil_sweep_duration_seconds',
      help: 'Duration of one sweep (lock held, claims and escalations)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: r,
    }),
    sweepClaimed: new client.Histogram({
      name: 'vigil_sweep_claimed_timers',
      help: 'Timers claimed (expired) per sweep',
      buckets: [0, 1, 5, 10, 50, 100, 500, 1000, 5000],
      registers: r,
    }),
    sweeps: labelledCounter({
      name: 'vigil_sweeps_total',
      help: 'Sweeps by outcome',
      labels: { outcome: ['swept', 'contended', 'swept_without_lock', 'failed', 'stopped'] },
      registers: r,
    }),
    lastSweep: new client.Gauge({
      name: 'vigil_last_successful_sweep_timestamp_seconds',
      help: 'Unix time of the last sweep that completed without error on this replica',
      registers: r,
    }),
    escalated: new client.Counter({ name: 'vigil_timers_escalated_total', help: 'Timers escalated to an SOS incident', registers: r }),
    escalationLag: new client.Histogram({
      name: 'vigil_escalation_lag_seconds',
      help: 'Time from a timer deadline to its incident being opened',
      buckets: LAG_BUCKETS,
      registers: r,
    }),
    escalationErrors: labelledCounter({
      name: 'vigil_escalation_errors_total',
      help: 'Escalations that failed and were left pending for repair, by kind: transient (the store was unavailable: not counted toward ESCALATION_MAX_ATTEMPTS, retried after a backoff) or counted',
      labels: { kind: ['transient', 'counted'] },
      registers: r,
    }),
    escalationsDeadLettered: new client.Counter({
      name: 'vigil_escalations_dead_lettered_total',
      help: 'Escalations dead-lettered by this replica after ESCALATION_MAX_ATTEMPTS failures',
      registers: r,
    }),
    lockAcquisitions: labelledCounter({
      name: 'vigil_lock_acquisitions_total',
      help: 'Sweep lock attempts by result; with SWEEP_SHARDS > 1 each shard lock tried counts once',
      labels: { result: ['won', 'contended', 'error'] },
      registers: r,
    }),
    lockHeld: new client.Histogram({
      name: 'vigil_lock_held_seconds',
      help: 'How long the sweep lock was held, from taking it to giving it back (one sweep, or every sweep it was kept for)',
      buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30],
      registers: r,
    }),
    lockExtensions: labelledCounter({
      name: 'vigil_lock_extensions_total',
      help: 'Lock lease renewals (every LOCK_TTL_MS / 3 while held) by result; lost stops the sweep claiming',
      labels: { result: ['ok', 'lost'] },
      registers: r,
    }),
    lockHolder: new client.Gauge({
      name: 'vigil_lock_holder',
      help: '1 while this replica holds the sweep lock: during a sweep, and between sweeps while it keeps the lease (SWEEP_KEEP_LEASE_MS)',
      registers: r,
    }),
    lockUnavailable: new client.Gauge({
      name: 'vigil_lock_unavailable',
      help: '1 while the lock service cannot be reached and this replica sweeps without a lock',
      registers: r,
    }),
  };
}
