/**
 * Real socket.io-client connections that record every event they receive. A moderators'
 * `events.batch` is recorded as the events it carries, in order, as a client handles it (the
 * batches themselves are in `batches`).
 */
import { io, type Socket } from 'socket.io-client';

export interface Recorder {
  socket: Socket;
  events: { name: string; payload: Record<string, unknown> }[];
  batches: { eventId: string; events: { name: string; payload: Record<string, unknown> }[] }[];
  named(name: string): Record<string, unknown>[];
  close(): void;
}

export async function connect(url: string, token: string): Promise<Recorder> {
  const socket = io(url, { auth: { token }, transports: ['websocket'], reconnection: false, forceNew: true });
  const events: Recorder['events'] = [];
  const batches: Recorder['batches'] = [];
  socket.onAny((name: string, payload: Record<string, unknown>) => {
    if (name !== 'events.batch') return void events.push({ name, payload });
    const batch = payload as Recorder['batches'][number];
    batches.push(batch);
    events.push(...batch.events);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('ready', () => resolve());
    socket.once('connect_error', (err) => reject(err));
  });
  return {
    socket,
    events,
    batches,
    named: (name) => events.filter((e) => e.name === name).map((e) => e.payload),
    close: () => socket.close(),
  };
}

/** The sockets a suite opens: `connect` records each, `closeAll` (in afterAll) closes every one. */
export function openSockets(): { connect(url: string, token: string): Promise<Recorder>; closeAll(): void } {
  const open: Recorder[] = [];
  return {
    async connect(url, token) {
      const r = await connect(url, token);
      open.push(r);
      return r;
    },
    closeAll() {
      for (const r of open.splice(0)) r.close();
    },
  };
}
