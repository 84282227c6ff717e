/**
 * Socket.IO: JWT in `auth.token`; each socket joins only `user:<sub>`, moderators also
 * `admins`. Clients only listen; commands go through REST. With a Redis adapter
 * (cluster mode) `io.to(room).emit` reaches sockets on every replica.
 */
import type { Server as HttpServer } from 'node:http';
import type { Logger } from 'pino';
import { Server, type ServerOptions } from 'socket.io';
import { verifyToken } from '../auth/tokens.js';
import type { Metrics } from '../metrics.js';
import type { EventPublisher, VigilEvent } from './events.js';

export const userRoom = (userId: string) => `user:${userId}`;
export const ADMINS = 'admins';

export interface Realtime {
  io: Server;
  publisher: EventPublisher;
  close(): Promise<void>;
}

export function createRealtime(
  http: HttpServer,
  opts: { jwtSecret: string; metrics: Metrics; log: Logger; adapter?: ServerOptions['adapter'] },
): Realtime {
  const io = new Server(http, {
    serveClient: false,
    cors: { origin: false },
    ...(opts.adapter ? { adapter: opts.adapter } : {}),
  });

  io.use((socket, next) => {
    const token: unknown = socket.handshake.auth?.token;
    if (typeof token !== 'string' || token.length === 0) return next(new Error('unauthorized: pass the JWT in auth.token'));
    try {
      socket.data.principal = verifyToken(opts.jwtSecret, token);
      next();
    } catch {
      next(new Error('unauthorized: the token is not valid'));
    }
  });

  io.on('connection', (socket) => {
    const p = socket.data.principal as { userId: string; admin: boolean };
    void socket.join(userRoom(p.userId));
    if (p.admin) void socket.join(ADMINS);
    opts.metrics.sockets.inc();
    socket.emit('ready', { userId: p.userId, admin: p.admin });
    socket.on('disconnect', () => opts.metrics.sockets.dec());
  });

  const publisher: EventPublisher = {
    publish(e: VigilEvent) {
      try {
        const rooms = e.adminsOnly ? [ADMINS] : e.toAdmins ? [userRoom(e.userId), ADMINS] : [userRoom(e.userId)];
        // one emit to the union of rooms: a moderator who is also the owner gets it once
        io.to(rooms).emit(e.name, e.payload);
      } catch (err) {
        opts.log.warn({ err, event: e.name }, 'event publish failed');
      }
    },
  };

  let closing: Promise<void> | undefined;
  return {
    io,
    publisher,
    close() {
      closing ??= new Promise<void>((resolve) => {
        io.disconnectSockets(true);
        // io.close() also closes the http server; main closes that itself
        io.engine.close();
        resolve();
      });
      return closing;
    },
  };
}
