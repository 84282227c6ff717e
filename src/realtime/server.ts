/**
 * Socket.IO: JWT in `auth.token`; each socket joins only `user:<sub>`, moderators also
 * `admins`. Clients only listen; commands go through REST. With a fan-out (cluster mode:
 * ./redis-fanout.ts) an event published on one replica reaches the rooms' sockets on every
 * replica; this replica's own sockets get it directly.
 */
import type { Server as HttpServer } from 'node:http';
import type { Logger } from 'pino';
import { Server } from 'socket.io';
import { verifyToken, type Principal, type TokenPolicy } from '../auth/tokens.js';
import type { Metrics } from '../metrics.js';
import type { EventPublisher, VigilEvent } from './events.js';
import type { Fanout } from './fanout.js';

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

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
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
    jwtSecret?: string;
    metrics: Metrics;
    log: Logger;
    /** cluster mode: the other replicas */
    fanout?: Fanout;
    /** exp required, maximum lifetime, iss/aud (../auth/tokens.ts) */
    tokenPolicy?: TokenPolicy;
    /** sockets one person may hold open on this replica; default 10 */
    perUser?: number;
  },
): Realtime {
  const perUser = opts.perUser ?? 10;
  const open = new Map<string, number>();
  const io = new Server(http, { serveClient: false, cors: { origin: false } });
  const fanout = opts.fanout;
  const localRooms = io.of('/').adapter.rooms;

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
    // the slot is taken now, not once connected: handshakes in flight count against the cap
    open.set(p.userId, (open.get(p.userId) ?? 0) + 1);
    const rooms = p.admin ? [userRoom(p.userId), ADMINS] : [userRoom(p.userId)];
    const release = once(() => {
      const n = (open.get(p.userId) ?? 1) - 1;
      if (n <= 0) open.delete(p.userId);
      else open.set(p.userId, n);
      if (fanout) rooms.forEach((r) => fanout.leave(r));
    });
    socket.conn.once('close', release);
    socket.once('disconnect', release);
    if (!fanout) return next();
    // listen to the socket's rooms before the client is told it is connected: an event
    // committed after the client's catch-up read then reaches it (docs/cluster.md)
    void Promise.all(rooms.map((r) => fanout.join(r))).then(() => {
      if (socket.conn.readyState !== 'open') {
        release();
        return next(new Error('the connection closed during the handshake'));
      }
      next();
    });
  });

  fanout?.onMessage((m) => {
    if (!localRooms.has(m.room)) return;
    (m.exceptAdmins ? io.to(m.room).except(ADMINS) : io.to(m.room)).emit(m.name, m.payload);
  });

  io.on('connection', (socket) => {
    const p = socket.data.principal as Principal;
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
      opts.metrics.sockets.dec();
    });
  });

  /** this replica's sockets: one emit to the union of rooms (a moderator who is also the owner gets it once); none when nobody here is in them */
  const local = (rooms: string[], name: string, payload: unknown) => {
    if (rooms.some((r) => localRooms.has(r))) io.to(rooms).emit(name, payload);
  };
  const publisher: EventPublisher = {
    publish(e: VigilEvent) {
      try {
        const user = userRoom(e.userId);
        const rooms = e.adminsOnly ? [ADMINS] : e.toAdmins ? [user, ADMINS] : [user];
        local(rooms, e.name, e.payload);
        if (!fanout) return;
        if (!e.adminsOnly) fanout.publish({ room: user, name: e.name, payload: e.payload, exceptAdmins: e.toAdmins });
        if (e.toAdmins || e.adminsOnly) fanout.publish({ room: ADMINS, name: e.name, payload: e.payload, exceptAdmins: false });
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
        // this replica's sockets only (with a cluster adapter a plain disconnectSockets() is
        // sent to every replica)
        io.local.disconnectSockets(true);
        // io.close() also closes the http server; main closes that itself
        io.engine.close();
        resolve();
      });
      return closing;
    },
  };
}
