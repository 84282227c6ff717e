/**
 * Events to Socket.IO rooms, on this replica and, through the adapter, on the others.
 *
 * - The person gets each event in their own room (`user:<id>`); this replica's sockets at
 *   once, whatever Redis does.
 * - Moderators (`admins`) get theirs coalesced: every moderator event of one event-loop turn
 *   goes out as one `events.batch` (flushed with `setImmediate`). The sweep publishes an
 *   escalation group's events in one turn, so a burst of N SOS costs moderators one emit per
 *   group, not 2N.
 * - Across replicas, a turn's emits ask once which of their rooms another replica has a
 *   socket in (`Replicas.heardElsewhere`) and go through the adapter only to those, leaving
 *   out this replica's own sockets (they had theirs): an SOS for someone whose app is not
 *   connected costs no Redis message. The question is asked after the events' write
 *   committed, so a replica that starts listening later does so for a handshake, and a
 *   catch-up read, that come later still.
 * Order is kept per room: within a batch, between batches, and across replicas (the
 * answers, and the publishes after them, come back in the order they were asked).
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Server } from 'socket.io';
import type { EventName, EventPublisher, VigilEvent } from './events.js';
import type { Replicas } from './replicas.js';

export const userRoom = (userId: string) => `user:${userId}`;
export const ADMINS = 'admins';
/** The moderators' event: `{ eventId, events: [{ name, payload }] }`. */
export const BATCH_EVENT = 'events.batch';
/** Events per `events.batch` at most (a bigger turn is sent as several, in order): bounds one Redis message. */
export const MAX_BATCH = 500;
/** Emits waiting for the other replicas' answer beyond this are not sent there (a hung Redis must not grow the heap). */
export const MAX_WAITING = 20_000;

export interface BatchedEvent {
  name: EventName;
  payload: Record<string, unknown>;
}

/** Names the batch by its content: the same events give the same id (a repaired escalation may publish them again). */
export function batchEventId(events: BatchedEvent[]): string {
  const h = createHash('sha256');
  for (const e of events) h.update(`${String(e.payload.eventId)}\n`);
  return `${BATCH_EVENT}:${h.digest('base64url').slice(0, 22)}`;
}

/** One emit for the other replicas: to `room`, not to moderators when `exceptAdmins` (they had it in their batch). */
interface Emit {
  room: string;
  name: string;
  payload: unknown;
  exceptAdmins: boolean;
}

export function createPublisher(
  io: Server,
  opts: {
    log: Pick<Logger, 'warn'>;
    /** cluster mode */
    replicas?: Replicas;
    maxWaiting?: number;
    /** emits not sent to the other replicas: Redis failed the question, or too many were waiting for it */
    onDropped?: (n: number, reason: 'error' | 'backlog') => void;
  },
): EventPublisher {
  const rooms = io.of('/').adapter.rooms;
  const maxWaiting = opts.maxWaiting ?? MAX_WAITING;
  const here = (room: string, name: string, payload: unknown, exceptAdmins: boolean) => {
    if (!rooms.has(room)) return;
    (exceptAdmins ? io.local.to(room).except(ADMINS) : io.local.to(room)).emit(name, payload);
  };

  let batch: BatchedEvent[] = [];
  let others: Emit[] = [];
  let waiting = 0;
  let scheduled = false;
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };

  /** logged once until Redis answers again */
  let failing = false;
  const failed = (n: number, reason: 'error' | 'backlog', err?: unknown) => {
    opts.onDropped?.(n, reason);
    if (!failing) opts.log.warn({ err, reason, waiting }, 'events reach only this replica until Redis answers again');
    failing = true;
  };

  /** The turn's emits to the rooms another replica has a socket in, without this replica's sockets. */
  const elsewhere = (replicas: Replicas, emits: Emit[]) => {
    if (waiting + emits.length > maxWaiting) return failed(emits.length, 'backlog');
    waiting += emits.length;
    replicas
      .heardElsewhere([...new Set(emits.map((e) => e.room))])
      .then((heard) => {
        failing = false;
        for (const e of emits) {
          if (!heard.has(e.room)) continue;
          const except = [...(rooms.get(e.room) ?? []), ...(e.exceptAdmins ? [ADMINS] : [])];
          io.to(e.room).except(except).emit(e.name, e.payload);
        }
      })
      .catch((err: unknown) => failed(emits.length, 'error', err))
      .finally(() => (waiting -= emits.length));
  };

  const flush = () => {
    scheduled = false;
    const events = batch;
    const emits = others;
    batch = [];
    others = [];
    try {
      // nobody to give a batch to: no moderator here, and no other replica to ask
      if (!opts.replicas && !rooms.has(ADMINS)) return;
      for (let i = 0; i < events.length; i += MAX_BATCH) {
        const part = events.slice(i, i + MAX_BATCH);
        const payload = { eventId: batchEventId(part), events: part };
        here(ADMINS, BATCH_EVENT, payload, false);
        emits.push({ room: ADMINS, name: BATCH_EVENT, payload, exceptAdmins: false });
      }
      if (opts.replicas && emits.length > 0) elsewhere(opts.replicas, emits);
    } catch (err) {
      opts.log.warn({ err, events: events.length }, 'event flush failed');
    }
  };

  return {
    publish(e: VigilEvent) {
      try {
        if (!e.adminsOnly) {
          // a moderator who owns the timer gets it once: in the moderators' batch
          const room = userRoom(e.userId);
          const payload = e.ownerPayload ?? e.payload;
          here(room, e.name, payload, e.toAdmins);
          if (opts.replicas) {
            others.push({ room, name: e.name, payload, exceptAdmins: e.toAdmins });
            schedule();
          }
        }
        if (e.toAdmins || e.adminsOnly) {
          batch.push({ name: e.name, payload: e.payload });
          schedule();
        }
      } catch (err) {
        opts.log.warn({ err, event: e.name }, 'event publish failed');
      }
    },
  };
}
