/** This process: prom-client's defaults, our own event-loop sampler, errors caught in background loops. */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import client from 'prom-client';
import { labelledCounter, labelledGauge } from './labelled.js';

/**
 * prom-client's default gauges that end in `_total` (promtool: "non-counter metrics should
 * not have _total suffix"); each is the sum of the same gauge without the suffix, by `type`.
 */
const DEFAULT_GAUGES_NAMED_LIKE_COUNTERS = ['nodejs_active_resources_total', 'nodejs_active_handles_total', 'nodejs_active_requests_total'];
export const DEFAULT_PREFIX = 'vigil_';

export function processMetrics(registry: client.Registry, collectDefault: boolean) {
  const r = [registry];
  if (collectDefault) {
    client.collectDefaultMetrics({ register: registry, prefix: DEFAULT_PREFIX });
    for (const name of DEFAULT_GAUGES_NAMED_LIKE_COUNTERS) registry.removeSingleMetric(DEFAULT_PREFIX + name);
  }
  // our own sampler (1 ms resolution; prom-client's default one samples every 10 ms): a
  // synchronous stretch of a few ms while a burst escalates is what this is here to show
  const loopDelay = collectDefault ? monitorEventLoopDelay({ resolution: 1 }) : undefined;
  loopDelay?.enable();
  return {
    eventLoopDelay: labelledGauge({
      name: 'vigil_event_loop_delay_seconds',
      help: 'Event-loop delay since the previous scrape (p50, p99, max): how long a ready callback (a request, a socket message) waited',
      labels: { stat: ['p50', 'p99', 'max'] },
      registers: r,
      collect() {
        if (!loopDelay || loopDelay.count === 0) return;
        const s = (ns: number) => ns / 1e9;
        this.set({ stat: 'p50' }, s(loopDelay.percentile(50)));
        this.set({ stat: 'p99' }, s(loopDelay.percentile(99)));
        this.set({ stat: 'max' }, s(loopDelay.max));
        loopDelay.reset();
      },
    }),
    loopErrors: labelledCounter({
      name: 'vigil_loop_errors_total',
      help: 'Errors caught in background loops (the tick, the wake-up at a deadline, the dispatcher, retention)',
      labels: { loop: ['sweep', 'wake', 'dispatch', 'retention'] },
      registers: r,
    }),
  };
}
