/**
 * Socket.IO: JWT in `auth.token`; each socket joins only `user:<sub>`, moderators also
 * `admins`. Clients only listen; commands go through REST. With a Socket.IO adapter to the
 * other replicas (cluster mode: ./replicas.ts) an emit to a room, or a disconnect of a
 * room's sockets, reaches the room's sockets on every replica. Events go out through
 * ./publisher.ts (moderators' events coalesced per turn).
 */
import type { Server as HttpServer } from 'node:http';
import type { Logger } from 'pino';
import { Server } from 'socket.io';
import { verifyToken, type Principal, type TokenPolicy } from '../auth/tokens.js';
import type { Metrics } from '../metrics.js';
import type { EventPublisher } from './events.js';
import { ADMINS, createPublisher, userRoom } from './publisher.js';
import type { Replicas } from './replicas.js';

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

export interface Realtime {
  io: Server;
  publisher: EventPublisher;
  /**
   * Disconnects every socket of `userId` on every replica (through the adapter), e.g. a
   * moderator whose access was revoked. A socket whose token expires is disconnected by its
   * own replica (a token is one socket's).
   */
  disconnectUser(userId: string): void;
  close(): Promise<void>;
}

export function createRealtime(
  http: HttpServer,
  opts: {
    jwtSecret?: string;
    metrics: Metrics;
    log: Logger;
    /** cluster mode: the Socket.IO adapter to the other replicas */
    replicas?: Replicas;
    /** exp required, maximum lifetime, iss/aud (../auth/tokens.ts) */
    tokenPolicy?: TokenPolicy;
    /** sockets one person may hold open on this replica; default 10 */
    perUser?: number;
    /** a connection that has not authenticated within this is closed (ms); default 5000 */
    authTimeoutMs?: number;
    /** largest message, a WebSocket frame or a long-polling body (bytes); default 8192 */
    maxMessageBytes?: number;
  },
): Realtime {
  const perUser = opts.perUser ?? 10;
  const open = new Map<string, number>();
  const replicas = opts.replicas;
  const io = new Server(http, {
    serveClient: false,
    cors: { origin: false },
    // a connection that has not joined the namespace (connected with a valid token) by then is closed
    connectTimeout: opts.authTimeoutMs ?? 5000,
    maxHttpBufferSize: opts.maxMessageBytes ?? 8192,
    ...(replicas ? { adapter: replicas.adapter } : {}),
  });

  io.use((socket, next) => {
    // a refused connection is closed once the refusal is sent: one token check per connection
    // (Socket.IO sends it on the next tick; socket.io-client closes on it too)
    const refuse = (message: string) => {
      next(new Error(message));
      opts.metrics.socketRefusals.inc({ reason: 'unauthorized' });
      setImmediate(() => socket.conn.close());
    };
    const token: unknown = socket.handshake.auth?.token;
    if (typeof token !== 'string' || token.length === 0) return refuse('unauthorized: pass the JWT in auth.token');
    let p: Principal;
    try {
      p = verifyToken(opts.jwtSecret, token, opts.tokenPolicy);
    } catch (err) {
      return refuse(`unauthorized: ${err instanceof Error ? err.message : 'the token is not valid'}`);
    }
    if ((open.get(p.userId) ?? 0) >= perUser) {
      next(new Error(`too many connections: at most ${perUser} per person`));
      return void setImmediate(() => socket.conn.close());
    }
    socket.data.principal = p;
    // the slot is taken now, not once connected: handshakes in flight count against the cap
    open.set(p.userId, (open.get(p.userId) ?? 0) + 1);
    const release = once(() => {
      const n = (open.get(p.userId) ?? 1) - 1;
      if (n <= 0) open.delete(p.userId);
      else open.set(p.userId, n);
    });
    socket.conn.once('close', release);
    socket.once('disconnect', release);
    // rooms are joined before the client is told it is connected (a failed handshake leaves them)
    const rooms = p.admin ? [userRoom(p.userId), ADMINS] : [userRoom(p.userId)];
    void socket.join(rooms);
    if (!replicas) return next();
    // and heard from the other replicas before: an event committed after the client's
    // catch-up read then reaches it (docs/cluster.md)
    void replicas.listening(rooms).then(() => {
      if (socket.conn.readyState !== 'open') {
        release();
        return next(new Error('the connection closed during the handshake'));
      }
      next();
    });
  });

  io.on('connection', (socket) => {
    const p = socket.data.principal as Principal;
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

  const publisher = createPublisher(io, {
    log: opts.log,
    replicas,
    onDropped: (n, reason) => opts.metrics.fanoutDropped.inc({ reason }, n),
  });

  let closing: Promise<void> | undefined;
  return {
    io,
    publisher,
    disconnectUser(userId) {
      io.in(userRoom(userId)).disconnectSockets(true);
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        // this replica's sockets only (through the adapter a plain disconnectSockets() is
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
