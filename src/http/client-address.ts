/**
 * The client address of a request Express does not route (a Socket.IO handshake), derived
 * exactly as Express derives `req.ip` for the app's own requests (its `trust proxy`): both
 * charge the same per-address budget, so both must name the same address.
 */
import type { IncomingMessage } from 'node:http';
import type { Express, Request } from 'express';

export function clientAddressOf(app: Express): (req: IncomingMessage) => string {
  return (req) => {
    // a view of `req` with the app's request prototype (whose `ip` getter reads the app's
    // `trust proxy fn`): nothing of `req` is changed
    const view = Object.create(app.request, {
      headers: { value: req.headers },
      socket: { value: req.socket },
    }) as Request;
    return view.ip ?? req.socket.remoteAddress ?? 'unknown';
  };
}
