/** HTTP requests, the commands among them, and the compare-and-swaps that lost a race. */
import type client from 'prom-client';
import { labelledCounter, labelledHistogram } from './labelled.js';

const READ_ONLY = new Set(['GET', 'HEAD', 'OPTIONS']);

export function requestMetrics(r: client.Registry[]) {
  const m = {
    httpDuration: labelledHistogram({
      name: 'vigil_http_request_duration_seconds',
      help: 'HTTP request duration by route template and status',
      labels: {
        method: { open: 'the HTTP method' },
        route: { open: 'the route template, e.g. `/v1/timers/:id`, never a URL with ids' },
        status: { open: 'the HTTP status answered' },
      },
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: r,
    }),
    commands: labelledCounter({
      name: 'vigil_commands_total',
      help: 'Requests that change state (not GET, HEAD or OPTIONS), by route template, outcome and error code',
      labels: {
        route: { open: 'the route template' },
        outcome: ['accepted', 'refused', 'failed'],
        reason: { open: 'the `error.code` answered ([errors.md](errors.md)); `none` when accepted' },
      },
      registers: r,
    }),
    /** One finished request: state-changing ones are counted by outcome and error code. */
    countCommand(method: string, route: string, status: number, code: unknown) {
      if (READ_ONLY.has(method)) return;
      const outcome = status >= 500 ? 'failed' : status >= 400 ? 'refused' : 'accepted';
      m.commands.inc({ route, outcome, reason: typeof code === 'string' && outcome !== 'accepted' ? code : 'none' });
    },
    casConflicts: labelledCounter({
      name: 'vigil_cas_conflicts_total',
      help: 'Compare-and-swap transitions that found the record in another state (races, all handled)',
      labels: { command: ['extend', 'safe', 'cancel', 'false_alarm', 'acknowledge', 'resolve', 'record_attempt', 'resend'] },
      registers: r,
    }),
  };
  return m;
}
