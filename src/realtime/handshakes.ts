/**
 * What a Socket.IO handshake may cost, decided before Engine.IO opens a session for it (an
 * Engine.IO middleware, run for WebSocket upgrades and long-polling handshakes alike):
 *   - it is charged to the budget of its client address, the one requests without a token
 *     spend: over it, 429 `rate_limited` with `Retry-After`;
 *   - the connections that carry Socket.IO stay under `maxConnections` (HTTP_MAX_CONNECTIONS
 *     less what is kept for plain HTTP): past it, 503 `sockets_full`, so a flood of sockets
 *     never takes the connections check-ins need.
 * A refusal closes the connection. Requests of an open session (a `sid`) are not charged.
 */
import { ServerResponse, STATUS_CODES, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { Server } from 'socket.io';

export interface HandshakeGuard {
  /** charges one handshake to its client address; the wait when the budget is spent */
  charge(req: IncomingMessage): Promise<{ retryAfterSeconds: number } | undefined>;
  /** connections carrying Socket.IO this replica may hold (handshakes past it are refused); absent: no cap */
  maxConnections?: number;
  /** counts a refusal */
  onRefused(reason: 'rate_limited' | 'full'): void;
}

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** Engine.IO's parsed query (its own decision whether a request is a handshake reads `sid` there) */
const sidOf = (req: IncomingMessage) => (req as IncomingMessage & { _query?: Record<string, string> })._query?.sid;

function refuse(req: IncomingMessage, res: ServerResponse, status: 429 | 503, error: object, headers: OutgoingHttpHeaders = {}) {
  const body = JSON.stringify({ error });
  const all: OutgoingHttpHeaders = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    Connection: 'close',
    ...headers,
  };
  if (res instanceof ServerResponse) {
    res.writeHead(status, all).end(body);
    return;
  }
  // an upgrade: Engine.IO's stand-in response writes nothing, so the answer goes on the connection
  const socket = req.socket;
  if (!socket.writable) return void socket.destroy();
  const head = Object.entries(all).map(([k, v]) => `${k}: ${String(v)}\r\n`);
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${head.join('')}\r\n${body}`, () => socket.destroy());
}

export function guardHandshakes(io: Server, g: HandshakeGuard): void {
  const engine = io.engine;
  // the TCP connections that carry Engine.IO requests (WebSockets, long polls, handshakes in
  // flight or being refused), each until it closes: what Socket.IO takes of HTTP_MAX_CONNECTIONS
  const held = new Set<Socket>();
  const hold = (tcp: Socket) => {
    if (held.has(tcp)) return;
    held.add(tcp);
    tcp.once('close', () => held.delete(tcp));
  };
  const cuts = closeUnauthenticated(io);

  const middleware: Middleware = (req, res, next) => {
    hold(req.socket);
    const sid = sidOf(req);
    if (sid) {
      cuts.upgrade(sid, req);
      return next();
    }
    void g
      .charge(req)
      .catch(() => undefined)
      .then((spent) => {
        if (spent) {
          g.onRefused('rate_limited');
          return refuse(
            req,
            res,
            429,
            {
              code: 'rate_limited',
              message: 'too many requests (ip budget); retry after the number of seconds in Retry-After',
              details: { budget: 'ip' },
            },
            { 'Retry-After': String(spent.retryAfterSeconds) },
          );
        }
        // this one's connection is in `held` too
        if (g.maxConnections !== undefined && held.size > g.maxConnections) {
          g.onRefused('full');
          return refuse(req, res, 503, {
            code: 'sockets_full',
            message: 'this replica holds all the Socket.IO connections it may; retry later',
          });
        }
        next();
      });
  };
  engine.use(middleware);
}

interface EngineSocket {
  id: string;
  request: IncomingMessage;
  once(event: 'close', fn: () => void): unknown;
}

/**
 * A WebSocket session that closes without having authenticated (the timeout, a failed token
 * check) has its connection cut once what was written is sent: Engine.IO closes it politely,
 * and `ws` would keep the connection of a client that never answers the close frame for 30 s.
 */
function closeUnauthenticated(io: Server): { upgrade(sid: string, req: IncomingMessage): void } {
  const authenticated = new WeakSet<object>();
  const connections = new WeakMap<object, Socket[]>();
  const isWebSocket = (req: IncomingMessage) =>
    (req as IncomingMessage & { _query?: Record<string, string> })._query?.transport === 'websocket';
  const keep = (session: object, tcp: Socket) => connections.set(session, [...(connections.get(session) ?? []), tcp]);
  io.on('connection', (socket) => authenticated.add(socket.conn));
  const sessions = new Map<string, EngineSocket>();
  io.engine.on('connection', (session: EngineSocket) => {
    sessions.set(session.id, session);
    if (isWebSocket(session.request)) keep(session, session.request.socket);
    session.once('close', () => {
      sessions.delete(session.id);
      if (authenticated.has(session)) return;
      for (const tcp of connections.get(session) ?? []) tcp.end(() => tcp.destroy());
    });
  });
  return {
    // a long-polling session moving to a WebSocket: the WebSocket's connection is the session's too
    upgrade(sid, req) {
      const session = sessions.get(sid);
      if (session && isWebSocket(req)) keep(session, req.socket);
    },
  };
}
