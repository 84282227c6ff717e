/**
 * Events across replicas over Redis Pub/Sub, one channel per Socket.IO room
 * (`<prefix>#user:<id>`, `<prefix>#admins`). A replica subscribes to a room's channel while
 * one of its own sockets is in the room (counted per room), so an event reaches only the
 * replicas that have someone to give it to. The events of one turn go out together: one
 * `PUBSUB NUMSUB` for their channels, then one PUBLISH of a small JSON message for each
 * event whose room another replica listens to; nobody listening, nothing is sent (a burst's
 * SOS for people whose app is not connected cost no publish at all). Plain Pub/Sub: any
 * Redis version.
 *
 * Why not `@socket.io/redis-adapter`: measured on this 2-core machine, 20,000 events (a burst
 * of 10,000 SOS) cost the escalating replica 0.7 s through the classic adapter (and every
 * other replica decoded all of them), 1.2-1.5 s through the sharded one (one emit per room),
 * and about 0.55 s as one plain PUBLISH per room and event (before the NUMSUB check, which
 * makes it nothing when nobody listens); docs/cluster.md, "Fan-out across replicas". Vigil uses nothing else
 * of the adapter: clients only listen, and no request crosses replicas.
 *
 * Fire-and-forget, like the adapter: nothing is replayed after a reconnect or a Redis
 * outage; clients re-read over REST (docs/cluster.md). Order is kept per publishing replica
 * (one connection, one Redis). A replica ignores its own messages: its sockets were given
 * the event directly.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { createClient } from 'redis';
import type { Fanout, FanoutMessage } from './fanout.js';

/** Events waiting for Redis (to be asked who listens, or to take the publish) beyond this are dropped: a hung Redis must not grow the heap without end. */
export const MAX_PUBLISHES_IN_FLIGHT = 20_000;
/** How long a socket's handshake waits for its rooms' subscriptions before going on without them. */
export const SUBSCRIBE_WAIT_MS = 1_000;

export interface RedisFanout extends Fanout {
  close(): Promise<void>;
}

export async function connectRedisFanout(
  url: string,
  log: Logger,
  opts: {
    prefix?: string;
    connectTimeoutMs?: number;
    maxInFlight?: number;
    subscribeWaitMs?: number;
    /** events not sent to the other replicas (metrics): Redis failed them, or too many were waiting */
    onDropped?: (n: number, reason: 'error' | 'backlog') => void;
  } = {},
): Promise<RedisFanout> {
  const prefix = `${opts.prefix ?? 'vigil:events'}#`;
  const maxInFlight = opts.maxInFlight ?? MAX_PUBLISHES_IN_FLIGHT;
  const subscribeWaitMs = opts.subscribeWaitMs ?? SUBSCRIBE_WAIT_MS;
  const uid = randomBytes(8).toString('hex');
  const pub = createClient({
    url,
    disableOfflineQueue: true,
    // no timer per command (node-redis's default makes an AbortSignal.timeout for each):
    // in-flight publishes are bounded by count instead
    commandOptions: { timeout: 0 },
    socket: { connectTimeout: opts.connectTimeoutMs ?? 5000, reconnectStrategy: (n: number) => Math.min(2000, 50 * 2 ** Math.min(n, 6)) },
  });
  // the subscriber keeps an offline queue: a room joined while Redis is away is subscribed
  // once it is back (node-redis re-subscribes what it had before a reconnect)
  const sub = pub.duplicate({ disableOfflineQueue: false, commandOptions: {} });
  let warned = false;
  const onError = (err: unknown) => {
    if (!warned) log.warn({ err }, 'Socket.IO Redis fan-out: connection error (events reach only this replica until it is back)');
    warned = true;
  };
  pub.on('error', onError);
  sub.on('error', onError);
  pub.on('ready', () => {
    if (warned) log.info('Socket.IO Redis fan-out: connected again');
    warned = false;
  });
  await Promise.all([pub.connect(), sub.connect()]);

  const rooms = new Map<string, number>();
  let receive: (m: FanoutMessage) => void = () => {};
  const onMessage = (raw: string) => {
    let m: [string, string, string, 0 | 1, unknown];
    try {
      m = JSON.parse(raw) as typeof m;
    } catch {
      return;
    }
    if (!Array.isArray(m) || m[0] === uid) return;
    receive({ room: m[1], name: m[2], exceptAdmins: m[3] === 1, payload: m[4] });
  };
  /** rooms whose channel Redis has confirmed this replica subscribes to (it counts in NUMSUB) */
  const listening = new Set<string>();
  /** the subscription each joined room waits for (its first socket's) */
  const subscribing = new Map<string, Promise<void>>();
  let queued: FanoutMessage[] = [];
  let inFlight = 0;
  let dropped = 0;
  let closed = false;

  const bounded = (p: Promise<unknown>, ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      t.unref();
      p.then(
        () => {
          clearTimeout(t);
          resolve();
        },
        (err: unknown) => {
          clearTimeout(t);
          onError(err);
          resolve();
        },
      );
    });

  const answered = () => {
    if (dropped > 0) log.info({ dropped }, 'Socket.IO Redis fan-out: Redis answers again');
    dropped = 0;
  };

  /**
   * Everything published in one turn: one NUMSUB for its channels, then a PUBLISH for each
   * message whose room another replica listens to, in order. Asked after the write the
   * events report was committed: a replica that starts listening later does so for a socket
   * whose handshake (and so whose client's catch-up read) comes later still.
   */
  const flush = () => {
    const batch = queued;
    queued = [];
    const channels = [...new Set(batch.map((m) => prefix + m.room))];
    pub
      .sendCommand(['PUBSUB', 'NUMSUB', ...channels])
      .then((reply) => {
        answered();
        const r = reply as unknown as (string | number)[];
        const others = new Map<string, number>();
        for (let i = 0; i + 1 < r.length; i += 2) {
          const channel = String(r[i]);
          others.set(channel, Number(r[i + 1]) - (listening.has(channel.slice(prefix.length)) ? 1 : 0));
        }
        // issued in this same turn: the next batch's NUMSUB answer comes after this one's, so order holds
        for (const m of batch) {
          if ((others.get(prefix + m.room) ?? 1) <= 0) {
            inFlight--;
            continue;
          }
          const body = JSON.stringify([uid, m.room, m.name, m.exceptAdmins ? 1 : 0, m.payload]);
          pub
            .publish(prefix + m.room, body)
            .catch((err: unknown) => {
              opts.onDropped?.(1, 'error');
              onError(err);
            })
            .finally(() => inFlight--);
        }
      })
      .catch((err: unknown) => {
        inFlight -= batch.length;
        opts.onDropped?.(batch.length, 'error');
        onError(err);
      });
  };

  return {
    async join(room) {
      const n = rooms.get(room) ?? 0;
      rooms.set(room, n + 1);
      if (closed) return;
      // a second socket in the room waits for the same subscription as the first
      let ready = subscribing.get(room);
      if (n === 0 || !ready) {
        ready = bounded(
          sub.subscribe(prefix + room, onMessage).then(() => {
            if (rooms.has(room)) listening.add(room);
          }),
          subscribeWaitMs,
        );
        subscribing.set(room, ready);
      }
      await ready;
    },
    leave(room) {
      const n = (rooms.get(room) ?? 0) - 1;
      if (n > 0) return void rooms.set(room, n);
      rooms.delete(room);
      listening.delete(room);
      subscribing.delete(room);
      if (!closed) sub.unsubscribe(prefix + room, onMessage).catch(onError);
    },
    publish(m) {
      if (closed) return;
      if (inFlight >= maxInFlight) {
        if (dropped++ === 0) log.warn({ inFlight }, 'Socket.IO Redis fan-out: Redis is not answering; events reach only this replica');
        opts.onDropped?.(1, 'backlog');
        return;
      }
      inFlight++;
      if (queued.push(m) === 1) setImmediate(flush);
    },
    onMessage(fn) {
      receive = fn;
    },
    close() {
      closed = true;
      return Promise.allSettled([sub.close(), pub.close()]).then(() => undefined);
    },
  };
}
