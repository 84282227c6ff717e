/**
 * The port to the other replicas (cluster mode): events for Socket.IO rooms, published on
 * one replica and given to the rooms' sockets on the others. The Redis adapter is
 * ./redis-fanout.ts; embedded has none.
 */

/** One event for one room, as it crosses replicas. `exceptAdmins`: moderators get it from the `admins` room's copy. */
export interface FanoutMessage {
  room: string;
  name: string;
  payload: unknown;
  exceptAdmins: boolean;
}

/** The port to the other replicas (cluster mode). */
export interface Fanout {
  /** This replica now has a socket in `room` (counted): hear the room's messages. Resolves once listening, or after a bounded wait. */
  join(room: string): Promise<void>;
  /** One socket fewer in `room`; the last one stops listening. */
  leave(room: string): void;
  /** To the other replicas' sockets in `m.room`; never throws, never waits. */
  publish(m: FanoutMessage): void;
  /** Messages from other replicas, for rooms this replica joined. */
  onMessage(fn: (m: FanoutMessage) => void): void;
}
