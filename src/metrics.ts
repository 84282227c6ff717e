/**
 * Every Prometheus metric, in one registry per process (no module singletons), declared by
 * area in ./metrics/. Names use base units (`_seconds`, `_total`); labels never carry a user,
 * timer, phone or room id, and each closed label lists its values beside its metric
 * (./metrics/labelled.ts), which is where the table in docs/operating.md comes from.
 */
import client from 'prom-client';
import { dispatchMetrics } from './metrics/dispatch.js';
import { zeroSeries, type LabelValuesOf } from './metrics/labelled.js';
import { moderationMetrics } from './metrics/moderation.js';
import { processMetrics } from './metrics/process.js';
import { realtimeMetrics } from './metrics/realtime.js';
import { requestMetrics } from './metrics/requests.js';
import { sqliteMetrics } from './metrics/sqlite.js';
import { storeMetrics } from './metrics/store.js';
import { sweepMetrics } from './metrics/sweep.js';

export type { StoreGauges } from './metrics/store.js';

export function createMetrics(opts: { replica: string; collectDefault?: boolean; storeTimeoutMs?: number; storeCacheMs?: number }) {
  const registry = new client.Registry();
  registry.setDefaultLabels({ replica: opts.replica });
  const r = [registry];
  const m = {
    registry,
    ...processMetrics(registry, opts.collectDefault !== false),
    ...sweepMetrics(r),
    ...dispatchMetrics(r),
    ...requestMetrics(r),
    ...realtimeMetrics(r),
    ...moderationMetrics(r),
    ...storeMetrics(r, { timeoutMs: opts.storeTimeoutMs, cacheMs: opts.storeCacheMs }),
    ...sqliteMetrics(r),
    /** Start known label values at 0 so alerts and rates see the series before the first event. */
    zeroKnownSeries() {
      zeroSeries(m.lockAcquisitions, 'result');
      zeroSeries(m.lockExtensions, 'result');
      zeroSeries(m.sweeps, 'outcome');
      zeroSeries(m.casConflicts, 'command');
      zeroSeries(m.loopErrors, 'loop');
      zeroSeries(m.fanoutDropped, 'reason');
      zeroSeries(m.retentionRecords, 'kind');
      zeroSeries(m.moderatorActions, 'action');
      zeroSeries(m.escalationErrors, 'kind');
    },
  };
  m.zeroKnownSeries();
  return m;
}

export type Metrics = ReturnType<typeof createMetrics>;

/** The background loops `vigil_loop_errors_total` names. */
export type LoopName = LabelValuesOf<Metrics['loopErrors']['allowedLabelValues']>['loop'];
