/**
 * Socket.IO: JWT in `auth.token`; each socket joins only `user:<sub>`, moderators also
 * `admins`. Clients only listen; commands go through REST. With a Redis adapter
 * (cluster mode) `io.to(room).emit` reaches sockets on every replica.
 */
import type { Server as HttpServer } from 'node:http';
import type { Logger } from 'pino';
import { Server, type ServerOptions } from 'socket.io';
import { verifyToken, type Principal, type TokenPolicy } from '../auth/tokens.js';
import type { Metrics } from '../metrics.js';
import type { EventPublisher, VigilEvent } from './events.js';

/** setTimeout cannot wait longer than 2^31-1 ms (~24.8 days, shorter than a token may live): wait in steps. */
function atTime(whenMs: number, fn: () => void): { cancel(): void } {
  const MAX = 2 ** 31 - 1;
  let t: NodeJS.Timeout | undefined;
  const arm = () => {
    const wait = whenMs - Date.now();
    if (wait <= 0) return fn();
    t = setTimeout(wait > MAX ? arm : fn, Math.min(wait, MAX));
    t.unref();
  };
  arm();
  return { cancel: () => clearTimeout(t) };
}

export const userRoom = (userId: string) => `user:${userId}`;
export const ADMINS = 'admins';

export interface Realtime {
  io: Server;
  publisher: EventPublisher;
  close(): Promise<void>;
}

export function createRealtime(
  http: HttpServer,
  opts: {
    jwtSecret: string;
    metrics: Metrics;
    log: Logger;
    adapter?: ServerOptions['adapter'];
    /** exp required, maximum lifetime, iss/aud (../auth/tokens.ts) */
    tokenPolicy?: TokenPolicy;
    /** sockets one person may hold open on this replica; default 10 */
    perUser?: number;
    /**
     * Emit to each room on its own (the owner's room except moderators, then moderators)
     * instead of one emit to the union. For the sharded Redis fan-out, which gives a
     * one-room emit its own channel, heard only by replicas with a socket in that room.
     */
    emitPerRoom?: boolean;
  },
): Realtime {
  const perUser = opts.perUser ?? 10;
  const open = new Map<string, number>();
  const io = new Server(http, {
    serveClient: false,
    cors: { origin: false },
    ...(opts.adapter ? { adapter: opts.adapter } : {}),
  });

  io.use((socket, next) => {
    const token: unknown = socket.handshake.auth?.token;
    if (typeof token !== 'string' || token.length === 0) return next(new Error('unauthorized: pass the JWT in auth.token'));
    let p: Principal;
    try {
      p = verifyToken(opts.jwtSecret, token, opts.tokenPolicy);
    } catch (err) {
      return next(new Error(`unauthorized: ${err instanceof Error ? err.message : 'the token is not valid'}`));
    }
    if ((open.get(p.userId) ?? 0) >= perUser) return next(new Error(`too many connections: at most ${perUser} per person`));
    socket.data.principal = p;
    next();
  });

  io.on('connection', (socket) => {
    const p = socket.data.principal as Principal;
    open.set(p.userId, (open.get(p.userId) ?? 0) + 1);
    void socket.join(userRoom(p.userId));
    if (p.admin) void socket.join(ADMINS);
    opts.metrics.sockets.inc();
    socket.emit('ready', { userId: p.userId, admin: p.admin });
    // a socket lives no longer than its token
    const expiry = atTime(p.expiresAtMs, () => {
      socket.emit('token.expired', { message: 'the token has expired; reconnect with a new one' });
      socket.disconnect(true);
    });
    socket.on('disconnect', () => {
      expiry.cancel();
      const n = (open.get(p.userId) ?? 1) - 1;
      if (n <= 0) open.delete(p.userId);
      else open.set(p.userId, n);
      opts.metrics.sockets.dec();
    });
  });

  const publisher: EventPublisher = {
    publish(e: VigilEvent) {
      try {
        if (e.adminsOnly) io.to(ADMINS).emit(e.name, e.payload);
        else if (!e.toAdmins) io.to(userRoom(e.userId)).emit(e.name, e.payload);
        else if (opts.emitPerRoom) {
          // a moderator who is also the owner gets it once: from the moderators' emit
          io.to(userRoom(e.userId)).except(ADMINS).emit(e.name, e.payload);
          io.to(ADMINS).emit(e.name, e.payload);
        }
        // one emit to the union of rooms: a moderator who is also the owner gets it once
        else io.to([userRoom(e.userId), ADMINS]).emit(e.name, e.payload);
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
        // this replica's sockets only: with a Redis adapter a plain disconnectSockets() is
        // sent to every replica and would drop every client of the cluster
        io.local.disconnectSockets(true);
        // io.close() also closes the http server; main closes that itself
        io.engine.close();
        resolve();
      });
      return closing;
    },
  };
}
