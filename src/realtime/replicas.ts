/**
 * The port to the other replicas (cluster mode): a Socket.IO adapter, so that an emit to a
 * room, or a command on a room's sockets (`disconnectSockets`), reaches the room's sockets
 * on every replica. Served by `@socket.io/redis-adapter` (./redis-adapter.ts); embedded has
 * none and uses Socket.IO's in-memory adapter.
 */
import type { ServerOptions } from 'socket.io';

export interface Replicas {
  /** the Socket.IO adapter the server is built with */
  adapter: ServerOptions['adapter'];
  /**
   * Resolves once this replica hears the other replicas' emits to `rooms` (its subscriptions
   * are confirmed; the rooms' sockets must have joined them), or after a bounded wait. A
   * handshake waits for it, so an event committed after the client's catch-up read reaches
   * the socket.
   */
  listening(rooms: string[]): Promise<void>;
  /**
   * Which of `rooms` another replica has a socket in, in one question: an emit to the others
   * is worth sending only for those. May answer a room nobody else has (never the reverse);
   * rejects when the answer cannot be had.
   */
  heardElsewhere(rooms: string[]): Promise<Set<string>>;
}
