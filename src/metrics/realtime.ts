/** Sockets, the events sent to other replicas, live location. */
import client from 'prom-client';
import { labelledCounter } from './labelled.js';

export function realtimeMetrics(r: client.Registry[]) {
  return {
    sockets: new client.Gauge({ name: 'vigil_socketio_connections', help: 'Open Socket.IO connections on this replica', registers: r }),
    socketRefusals: labelledCounter({
      name: 'vigil_socketio_refused_total',
      help: 'Socket.IO connections refused or closed before they authenticated: a handshake over the address budget (rate_limited), past the sockets share of HTTP_MAX_CONNECTIONS (full), a failed token check (unauthorized)',
      labels: { reason: ['rate_limited', 'full', 'unauthorized'] },
      registers: r,
    }),
    fanoutDropped: labelledCounter({
      name: 'vigil_fanout_dropped_total',
      help: 'Socket.IO emits not sent to the other replicas: Redis failed the question who listens or the publish (error), or too many were waiting for it (backlog)',
      labels: { reason: ['error', 'backlog'] },
      registers: r,
    }),
    locationFixes: labelledCounter({
      name: 'vigil_location_fixes_total',
      help: 'Location fixes by outcome (kept, dropped, rate_limited) and cache or flush failures (cache_error, flush_error); never coordinates',
      labels: { outcome: ['kept', 'dropped', 'rate_limited', 'cache_error', 'flush_error'] },
      registers: r,
    }),
  };
}
