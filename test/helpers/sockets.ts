/** Real socket.io-client connections that record every event they receive. */
import { io, type Socket } from 'socket.io-client';

export interface Recorder {
  socket: Socket;
  events: { name: string; payload: Record<string, unknown> }[];
  named(name: string): Record<string, unknown>[];
  close(): void;
}

export async function connect(url: string, token: string): Promise<Recorder> {
  const socket = io(url, { auth: { token }, transports: ['websocket'], reconnection: false, forceNew: true });
  const events: Recorder['events'] = [];
  socket.onAny((name: string, payload: Record<string, unknown>) => events.push({ name, payload }));
  await new Promise<void>((resolve, reject) => {
    socket.once('ready', () => resolve());
    socket.once('connect_error', (err) => reject(err));
  });
  return {
    socket,
    events,
    named: (name) => events.filter((e) => e.name === name).map((e) => e.payload),
    close: () => socket.close(),
  };
}
