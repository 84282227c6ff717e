/**
 * Socket.IO: JWT in `auth.token`; each socket joins only `user:<sub>`, moderators also
 * `admins`. Clients only listen; commands go through REST. A socket lives no longer than its
 * token: it is cut off when the token expires, and, every `recheckMs`, when its person's
 * tokens were revoked after it was issued (one store read per replica per round); a
 * revocation also cuts the person's sockets off at once (`disconnectUser`). With a Socket.IO adapter to the
 * other replicas (cluster mode: ./replicas.ts) an emit to a room, or a disconnect of a
 * room's sockets, reaches the room's sockets on every replica. Events go out through
 * ./publisher.ts (moderators' events coalesced per turn).
 */
import type { Server as HttpServer } from 'node:http';
import type { Logger } from 'pino';
import { Server } from 'socket.io';
import { isRevoked, tokenRevoked, verifyToken, type Principal, type RevocationCheck, type TokenPolicy } from '../auth/tokens.js';
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
    /** the people's "tokens not before" stamps: read fresh at each handshake, and every `recheckMs` for every open socket */
    revocation?: RevocationCheck;
    /** how often open sockets are re-checked (revocation, expiry), ms; default 30000 */
    recheckMs?: number;
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

  let lastWarnAt = -Infinity;
  const refused = (code: string, message: string) => Object.assign(new Error(`unauthorized: ${message}`), { data: { code } });

  io.use((socket, next) => {
    // a refused connection is closed once the refusal is sent: one token check per connection
    // (Socket.IO sends it on the next tick; socket.io-client closes on it too)
    const refuse = (err: Error) => {
      next(err);
      opts.metrics.socketRefusals.inc({ reason: 'unauthorized' });
      setImmediate(() => socket.conn.close());
    };
    const token: unknown = socket.handshake.auth?.token;
    if (typeof token !== 'string' || token.length === 0) return refuse(refused('unauthorized', 'pass the JWT in auth.token'));
    let p: Principal;
    try {
      p = verifyToken(opts.jwtSecret, token, opts.tokenPolicy);
    } catch (err) {
      const code = typeof (err as { code?: unknown }).code === 'string' ? String((err as { code: string }).code) : 'unauthorized';
      return refuse(refused(code, err instanceof Error ? err.message : 'the token is not valid'));
    }
    if ((open.get(p.userId) ?? 0) >= perUser) {
      next(new Error(`too many connections: at most ${perUser} per person`));
      return void setImmediate(() => socket.conn.close());
    }
    socket.data.principal = p;
    // the slot is taken now, not once connected: handshakes in flight count against the cap
    // (and so bound the store reads one person's handshakes make)
    open.set(p.userId, (open.get(p.userId) ?? 0) + 1);
    const release = once(() => {
      const n = (open.get(p.userId) ?? 1) - 1;
      if (n <= 0) open.delete(p.userId);
      else open.set(p.userId, n);
    });
    socket.conn.once('close', release);
    socket.once('disconnect', release);
    const fail = (err: Error) => {
      release();
      next(err);
    };
    // revoked? read fresh from the store: a socket cut off by a revocation on another replica
    // must not come back here before this replica's cache has heard of it
    const checked = opts.revocation
      ? opts.revocation.notBefore([p.userId], { fresh: true }).then(
          (stamps) => (isRevoked(p, stamps.get(p.userId)) ? refused('token_revoked', tokenRevoked().message) : undefined),
          (err: unknown) => {
            // once a minute at most: a store outage must not turn reconnecting clients into a log flood
            if (Date.now() - lastWarnAt > 60_000) {
              lastWarnAt = Date.now();
              opts.log.warn({ err }, 'socket handshakes cannot read token revocation stamps; refused until the store answers');
            }
            return Object.assign(new Error('unavailable: the token could not be checked; try again'), {
              data: { code: 'store_unavailable' },
            });
          },
        )
      : Promise.resolve(undefined);
    void checked.then((refusal) => {
      if (refusal) {
        release();
        return refuse(refusal);
      }
      // rooms are joined before the client is told it is connected (a failed handshake leaves them)
      const rooms = p.admin ? [userRoom(p.userId), ADMINS] : [userRoom(p.userId)];
      void socket.join(rooms);
      if (!replicas) return next();
      // and heard from the other replicas before: an event committed after the client's
      // catch-up read then reaches it (docs/cluster.md)
      void replicas.listening(rooms).then(() => {
        if (socket.conn.readyState !== 'open') return fail(new Error('the connection closed during the handshake'));
        next();
      });
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

  // Every recheckMs: each open socket of this replica whose token expired, or whose person's
  // tokens were revoked after it was issued, is cut off. One read of the stamps for every
  // person with a socket here; a read that fails is logged and tried again next round.
  let rechecking = false;
  const recheck = async () => {
    if (rechecking) return;
    rechecking = true;
    try {
      const sockets = [...io.of('/').sockets.values()];
      if (sockets.length === 0) return;
      const now = Date.now();
      const stamps = opts.revocation
        ? await opts.revocation.notBefore([...new Set(sockets.map((s) => (s.data.principal as Principal).userId))], { fresh: true })
        : new Map<string, number>();
      for (const socket of sockets) {
        const p = socket.data.principal as Principal;
        if (p.expiresAtMs <= now) {
          socket.emit('token.expired', { message: 'the token has expired; reconnect with a new one' });
          socket.disconnect(true);
        } else if (isRevoked(p, stamps.get(p.userId))) {
          socket.emit('token.revoked', { message: tokenRevoked().message });
          socket.disconnect(true);
        }
      }
    } catch (err) {
      opts.log.warn({ err }, 'the periodic token check of open sockets failed; retried next round');
    } finally {
      rechecking = false;
    }
  };
  const recheckTimer = setInterval(() => void recheck(), opts.recheckMs ?? 30_000);
  recheckTimer.unref();

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
      clearInterval(recheckTimer);
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
