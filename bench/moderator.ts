/**
 * The moderators' side of a run: Socket.IO clients that stay connected for the whole run, as
 * an open console does, and the "moderator sees SOS" figure: per incident, deadline → the
 * moment its SOS reached the *slowest* of the sockets. Any server that pushes
 * `sos.triggered` (or moderator `events.batch`) with `{ incident: { id, deadline } }` and
 * says `ready` once the socket is in its room can be measured: Vigil, and the BullMQ baseline.
 */
import { io, type Socket } from 'socket.io-client';
import { waitUntil } from './measure.js';
import { spread, type Row } from './result.js';

export class Moderators {
  private readonly sockets: Socket[] = [];
  /** incident id → its deadline and when each socket got its SOS (epoch ms) */
  private readonly seen = new Map<string, { deadline: number; at: number[] }>();

  /** Connect one more moderator socket; resolves once the server said `ready`. */
  async connect(url: string, token: string): Promise<void> {
    const k = this.sockets.length;
    const m = io(url, { auth: { token }, transports: ['websocket'] });
    this.sockets.push(m);
    const got = new Set<string>();
    const onSos = (payload: unknown) => {
      const incident = (payload as { incident?: { id?: string; deadline?: string } } | undefined)?.incident;
      if (!incident?.id || !incident.deadline || got.has(incident.id)) return;
      got.add(incident.id);
      const entry = this.seen.get(incident.id) ?? { deadline: Date.parse(incident.deadline), at: [] };
      entry.at[entry.at.length] = Date.now();
      this.seen.set(incident.id, entry);
    };
    // Vigil's moderators get their events coalesced (`events.batch`); a single `sos.triggered` is handled too
    m.on('events.batch', (batch: { events?: { name: string; payload: unknown }[] }) => {
      for (const e of batch.events ?? []) if (e.name === 'sos.triggered') onSos(e.payload);
    });
    m.on('sos.triggered', onSos);
    await new Promise<void>((resolve, reject) => {
      m.once('ready', () => resolve());
      m.once('connect_error', (err) => reject(new Error(`moderator socket ${k + 1}: ${err.message}`)));
    });
  }

  /** incidents whose SOS reached every socket */
  private complete(): { deadline: number; at: number[] }[] {
    return [...this.seen.values()].filter((x) => x.at.length === this.sockets.length);
  }

  /** Wait until `n` incidents reached every socket, or `deadline` (epoch ms) passes. */
  waitFor(n: number, deadline: number): Promise<boolean> {
    return waitUntil(() => this.complete().length >= n, deadline);
  }

  /** Sets `row.moderator` (deadline → the slowest socket, over incidents every socket saw) and notes what is missing of `n`. */
  figures(row: Row, n: number): void {
    const late = this.complete().map((x) => x.at.reduce((a, b) => Math.max(a, b), -Infinity) - x.deadline);
    row.moderator = spread(late);
    if (late.length < n) row.notes.push(`${late.length}/${n} SOS seen on every moderator socket`);
  }

  close(): void {
    for (const m of this.sockets.splice(0)) m.close();
  }
}
