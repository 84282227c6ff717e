/**
 * `@socket.io/redis-adapter` on the service's node-redis client (cluster mode), the sharded
 * adapter (Redis 7.0+ sharded Pub/Sub) with `subscriptionMode: 'dynamic'`: one channel per
 * room, which a replica subscribes to while one of its sockets is in the room. So an emit to
 * a person's room reaches only the replicas that hold one of their sockets, and Redis can say
 * which rooms another replica listens to (`PUBSUB SHARDNUMSUB`, `heardElsewhere`): the
 * publisher emits across replicas only to those. The classic adapter (one pattern
 * subscription per replica) gives every replica every emit and cannot say; measured in
 * docs/cluster.md ("Fan-out across replicas").
 *
 * What this file adds to the adapter is only what node-redis and a hung Redis need:
 * - The adapter does not catch its SUBSCRIBE calls (a rejection would be an unhandled
 *   rejection, which stops the process); each is caught and logged once per outage, and
 *   remembered, so a handshake can wait for its rooms' subscriptions (`listening`, bounded).
 * - A failed SPUBLISH is counted (`onDropped`). There is no timer per command (node-redis's
 *   default command timeout makes an AbortSignal for each): what waits for a Redis that does
 *   not answer is bounded by count in ./publisher.ts instead (every emit there first waits
 *   for `heardElsewhere`, on the same connection as the publishes).
 *
 * Fire-and-forget, like the adapter: nothing is replayed after a reconnect or a Redis
 * outage; clients re-read over REST (docs/cluster.md).
 */
import { createShardedAdapter } from '@socket.io/redis-adapter';
import type { Logger } from 'pino';
import { createClient } from 'redis';
import type { Replicas } from './replicas.js';

/** How long a socket's handshake waits for its rooms' subscriptions before going on without them. */
export const SUBSCRIBE_WAIT_MS = 1_000;
/** Sharded Pub/Sub came with Redis 7.0. */
const MIN_REDIS_MAJOR = 7;

export interface RedisReplicas extends Replicas {
  close(): Promise<void>;
}

type Method = (...args: unknown[]) => Promise<unknown>;

/** Replace `client[name]` by `wrap(original)` (node-redis commands live on the prototype; this shadows one on the instance). */
function shadow(client: object, name: string, wrap: (original: Method) => Method): void {
  const original = (client as Record<string, unknown>)[name];
  if (typeof original !== 'function') throw new Error(`the Redis client has no ${name}()`);
  Object.defineProperty(client, name, { configurable: true, writable: true, value: wrap((original as Method).bind(client)) });
}

const each = (channels: unknown) => (Array.isArray(channels) ? channels : [channels]).map(String);

export async function connectRedisAdapter(
  url: string,
  log: Logger,
  opts: {
    /** channel prefix; default `vigil:socket.io` */
    key?: string;
    connectTimeoutMs?: number;
    subscribeWaitMs?: number;
    /** emits not sent to the other replicas (metrics): Redis failed the publish */
    onDropped?: (n: number, reason: 'error') => void;
  } = {},
): Promise<RedisReplicas> {
  const key = opts.key ?? 'vigil:socket.io';
  const subscribeWaitMs = opts.subscribeWaitMs ?? SUBSCRIBE_WAIT_MS;
  const pub = createClient({
    url,
    disableOfflineQueue: true,
    commandOptions: { timeout: 0 },
    socket: { connectTimeout: opts.connectTimeoutMs ?? 5000, reconnectStrategy: (n: number) => Math.min(2000, 50 * 2 ** Math.min(n, 6)) },
  });
  // the subscriber keeps an offline queue: a room joined while Redis is away is subscribed
  // once it is back (node-redis subscribes again what it had before a reconnect)
  const sub = pub.duplicate({ disableOfflineQueue: false, commandOptions: {} });
  let warned = false;
  const onError = (err: unknown) => {
    if (!warned) log.warn({ err }, 'Socket.IO Redis adapter: connection error (events reach only this replica until it is back)');
    warned = true;
  };
  pub.on('error', onError);
  sub.on('error', onError);
  pub.on('ready', () => {
    if (warned) log.info('Socket.IO Redis adapter: connected again');
    warned = false;
  });
  await Promise.all([pub.connect(), sub.connect()]);
  const version = /^redis_version:(\d+)/m.exec(await pub.info('server'))?.[1];
  if (version !== undefined && Number(version) < MIN_REDIS_MAJOR) {
    await Promise.allSettled([sub.close(), pub.close()]);
    throw new Error(`Redis ${version} has no sharded Pub/Sub; the Socket.IO adapter needs Redis ${MIN_REDIS_MAJOR}.0 or later`);
  }

  // the adapter catches a failed publish itself (and says nothing): counted here
  shadow(
    pub,
    'sPublish',
    (publish) =>
      (...args) =>
        publish(...args).catch((err: unknown) => {
          opts.onDropped?.(1, 'error');
          onError(err);
          return 0;
        }),
  );
  /** channel → its subscription, as the adapter asked for it (it awaits none) */
  const subscriptions = new Map<string, Promise<void>>();
  /** channels whose subscription Redis has confirmed (so it counts this replica in SHARDNUMSUB) */
  const confirmed = new Set<string>();
  shadow(sub, 'sSubscribe', (subscribe) => (channels, ...rest) => {
    const names = each(channels);
    const p: Promise<void> = subscribe(channels, ...rest).then(
      () => names.forEach((c) => subscriptions.get(c) === p && confirmed.add(c)),
      (err: unknown) => onError(err),
    );
    for (const c of names) subscriptions.set(c, p);
    return p;
  });
  shadow(sub, 'sUnsubscribe', (unsubscribe) => (channels, ...rest) => {
    for (const c of each(channels)) {
      subscriptions.delete(c);
      confirmed.delete(c);
    }
    return unsubscribe(channels, ...rest).catch(onError);
  });

  const adapter = createShardedAdapter(pub, sub, { channelPrefix: key, subscriptionMode: 'dynamic' });
  // the adapter's channels for namespace '/': its own (commands such as disconnectSockets), and one per room
  const main = `${key}#/#`;
  const channelOf = (room: string) => `${main}${room}#`;

  const bounded = (p: Promise<unknown>) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, subscribeWaitMs);
      t.unref();
      void p.finally(() => {
        clearTimeout(t);
        resolve();
      });
    });

  let closing: Promise<void> | undefined;
  return {
    adapter,
    listening: (rooms) => bounded(Promise.all([main, ...rooms.map(channelOf)].map((c) => subscriptions.get(c)))),
    async heardElsewhere(rooms) {
      const channels = rooms.map(channelOf);
      // this replica counts itself only where Redis confirmed it before the question was sent:
      // otherwise a room another replica listens to could look like nobody's
      const self = new Set(channels.filter((c) => confirmed.has(c)));
      const reply = (await pub.sendCommand(['PUBSUB', 'SHARDNUMSUB', ...channels])) as unknown as (string | number)[];
      const heard = new Set<string>();
      for (let i = 0; i + 1 < reply.length; i += 2) {
        const channel = String(reply[i]);
        if (Number(reply[i + 1]) - (self.has(channel) ? 1 : 0) > 0) heard.add(channel.slice(main.length, -1));
      }
      return heard;
    },
    close() {
      closing ??= Promise.allSettled([sub.close(), pub.close()]).then(() => undefined);
      return closing;
    },
  };
}
