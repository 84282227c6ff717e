/**
 * The Socket.IO connection: the moderator's token in `auth.token`, events deduped by
 * `eventId` (a repaired escalation may publish the same fact twice), and the
 * connection state for the indicator. `onReady` fires on every (re)connect once the
 * server has put the socket in its rooms: the caller re-reads state over REST then,
 * because nothing replays the events missed while disconnected.
 */
import { eventIdOf } from './types.js';

interface IoSocket {
  on(event: string, fn: (...args: unknown[]) => void): IoSocket;
  connect(): IoSocket;
  disconnect(): IoSocket;
  removeAllListeners(): IoSocket;
  readonly io: { on(event: string, fn: (...args: unknown[]) => void): unknown };
}
type IoFactory = (opts: { auth: { token: string }; transports: string[]; reconnectionDelayMax?: number }) => IoSocket;

export type ConnState = 'connecting' | 'live' | 'reconnecting' | 'offline';

export interface LiveHandlers {
  state(s: ConnState, detail: string): void;
  ready(): void;
  /** the server refused the token: stop and ask for a new one */
  refused(message: string): void;
  event(name: string, payload: unknown): void;
}

export const LIVE_EVENTS = ['sos.triggered', 'incident.updated', 'delivery.updated', 'timer.expired', 'location.updated'] as const;
/** Moderators receive their events in batches, one per server turn: `{ eventId, events: [{ name, payload }] }`, in order. */
export const BATCH_EVENT = 'events.batch';
const isLive = (name: unknown): name is (typeof LIVE_EVENTS)[number] => (LIVE_EVENTS as readonly unknown[]).includes(name);

/** Remembers the last `cap` event ids. */
class Seen {
  private readonly ids = new Set<string>();
  constructor(private readonly cap: number) {}
  /** true the first time an id is offered */
  fresh(id: string): boolean {
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    if (this.ids.size > this.cap) {
      const oldest = this.ids.values().next().value;
      if (oldest !== undefined) this.ids.delete(oldest);
    }
    return true;
  }
}

export class Live {
  private socket: IoSocket | undefined;
  private readonly seen = new Seen(5000);
  private closed = false;

  constructor(private readonly h: LiveHandlers) {}

  open(token: string): void {
    const io = (globalThis as unknown as { io?: IoFactory }).io;
    if (!io) {
      this.h.state('offline', 'The Socket.IO client did not load; reload the page.');
      return;
    }
    this.h.state('connecting', 'Connecting…');
    // WebSocket only: behind a load balancer, HTTP long-polling would need sticky sessions
    const s = io({ auth: { token }, transports: ['websocket'], reconnectionDelayMax: 5000 });
    this.socket = s;
    s.on('ready', (info) => {
      const admin = typeof info === 'object' && info !== null && (info as { admin?: unknown }).admin === true;
      if (!admin) {
        this.close();
        this.h.refused('The server does not recognise this token as a moderator’s.');
        return;
      }
      this.h.state('live', 'Live');
      this.h.ready();
    });
    s.on('disconnect', (reason) => {
      if (this.closed) return;
      this.h.state('reconnecting', 'Connection lost; reconnecting…');
      // the server closed this socket (e.g. a replica shutting down): Socket.IO does not retry that on its own
      if (reason === 'io server disconnect') setTimeout(() => !this.closed && s.connect(), 1000);
    });
    s.on('connect_error', (err) => {
      if (this.closed) return;
      const message = err instanceof Error ? err.message : String(err);
      if (message.startsWith('unauthorized')) {
        this.close();
        this.h.refused(`The server refused the token (${message}).`);
        return;
      }
      this.h.state('offline', 'Cannot reach Vigil; retrying…');
    });
    s.io.on('reconnect_attempt', (n) => {
      if (!this.closed) this.h.state('reconnecting', `Reconnecting (attempt ${String(n)})…`);
    });
    // each event of a batch is handled as if it had come alone; one also sent alone is handled the same way
    for (const name of LIVE_EVENTS) s.on(name, (payload) => this.one(name, payload));
    s.on(BATCH_EVENT, (batch) => {
      const events = typeof batch === 'object' && batch !== null ? (batch as { events?: unknown }).events : undefined;
      if (!Array.isArray(events)) return;
      for (const e of events as { name?: unknown; payload?: unknown }[]) if (isLive(e?.name)) this.one(e.name, e.payload);
    });
  }

  private one(name: string, payload: unknown): void {
    const id = eventIdOf(payload);
    if (id !== undefined && !this.seen.fresh(id)) return;
    this.h.event(name, payload);
  }

  close(): void {
    this.closed = true;
    this.socket?.removeAllListeners();
    this.socket?.disconnect();
    this.socket = undefined;
  }
}
