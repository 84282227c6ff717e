/**
 * Socket.IO Redis adapter (cluster mode): events emitted on one replica reach sockets
 * on every replica. The adapter does not replay what it missed while Redis was away;
 * clients re-read over REST with `since=<cursor>` after a reconnect.
 *
 * Two modes (`SOCKET_FANOUT`):
 * - `sharded` (Redis 7.0 or later): sharded Pub/Sub with one channel per room
 *   (`createShardedAdapter`, subscription mode `dynamic`). A replica subscribes to a room's
 *   channel while one of its own sockets is in that room, so an event reaches only the
 *   replicas that have someone to give it to. Without it every replica decodes every event
 *   of the cluster: during a burst of 10,000 SOS, 20,000 messages on each replica.
 * - `classic`: one pattern subscription per replica; every replica receives every event.
 *   For Redis before 7.0.
 * `auto` (the default) picks `sharded` when the server is 7.0 or later.
 *
 * The two modes do not hear each other (sharded and classic Pub/Sub are separate in Redis):
 * replicas of one deployment must use the same one.
 */
import { createAdapter, createShardedAdapter } from '@socket.io/redis-adapter';
import type { Logger } from 'pino';
import { createClient } from 'redis';

export type FanoutMode = 'sharded' | 'classic';

export interface RedisFanout {
  adapter: ReturnType<typeof createAdapter> | ReturnType<typeof createShardedAdapter>;
  mode: FanoutMode;
  close(): Promise<void>;
}

/** `redis_version:7.0.15` in INFO server → [7, 0] */
export function redisMajorMinor(info: string): [number, number] | undefined {
  const m = /^redis_version:(\d+)\.(\d+)/m.exec(info);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/** How long a broadcast waits for Redis to take its publish before giving the event to this replica's own sockets anyway. */
export const PUBLISH_WAIT_MS = 5_000;

/**
 * Replace a client method with one that never rejects (a rejection is logged: the adapter
 * does not handle it) and, with `waitMs`, settles with `fallback` once that long has passed
 * without an answer. One interval checks every waiting call, instead of the timer and
 * AbortSignal node-redis would make per command (its default command timeout): those were
 * about a tenth of the escalating replica's time, garbage collection included, during a
 * burst of 20,000 events.
 */
function guard<T extends object>(client: T, name: string, onError: (err: unknown) => void, fallback: unknown, waitMs?: number): void {
  const fn = (client as Record<string, unknown>)[name];
  const waiting = new Set<{ at: number; settle: (v: unknown) => void }>();
  if (typeof fn !== 'function') return;
  const bound = (fn as (...a: unknown[]) => Promise<unknown>).bind(client);
  let check: NodeJS.Timeout | undefined;
  const expire = () => {
    const cut = Date.now() - (waitMs ?? 0);
    // a Set iterates in insertion order: the oldest first
    for (const w of waiting) {
      if (w.at > cut) break;
      waiting.delete(w);
      onError(new Error(`Redis did not answer ${name} within ${waitMs} ms`));
      w.settle(fallback);
    }
    if (waiting.size === 0) {
      clearInterval(check);
      check = undefined;
    }
  };
  Object.defineProperty(client, name, {
    configurable: true,
    value: (...args: unknown[]) => {
      const r = bound(...args) as Promise<unknown> | undefined;
      if (!r?.then) return r;
      if (waitMs === undefined)
        return r.catch((err: unknown) => {
          onError(err);
          return fallback;
        });
      return new Promise((resolve) => {
        const w = { at: Date.now(), settle: resolve };
        waiting.add(w);
        check ??= setInterval(expire, Math.max(10, Math.floor(waitMs / 5))).unref();
        r.then(
          (v) => {
            waiting.delete(w);
            resolve(v);
          },
          (err: unknown) => {
            waiting.delete(w);
            onError(err);
            resolve(fallback);
          },
        );
      });
    },
  });
}

export async function connectRedisFanout(
  url: string,
  log: Logger,
  opts: { keyPrefix?: string; connectTimeoutMs?: number; mode?: FanoutMode | 'auto'; publishWaitMs?: number } = {},
): Promise<RedisFanout> {
  const pub = createClient({
    url,
    disableOfflineQueue: true,
    // no per-command timer: guard() below bounds the wait for every publish with one interval
    commandOptions: { timeout: 0 },
    socket: { connectTimeout: opts.connectTimeoutMs ?? 5000, reconnectStrategy: (n: number) => Math.min(2000, 50 * 2 ** Math.min(n, 6)) },
  });
  // The subscriber keeps an offline queue: a room joined while Redis is away is subscribed
  // when it is back (node-redis re-subscribes what it had; a refused subscribe is forgotten).
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
  const key = opts.keyPrefix ?? 'vigil:socket.io';
  let mode: FanoutMode;
  if (opts.mode === 'sharded' || opts.mode === 'classic') mode = opts.mode;
  else {
    const v = redisMajorMinor(await pub.info('server'));
    mode = v && v[0] >= 7 ? 'sharded' : 'classic';
    if (mode === 'classic')
      log.info(
        { redisVersion: v?.join('.') ?? 'unknown' },
        'Socket.IO Redis fan-out: Redis before 7.0, every replica receives every event',
      );
  }
  // The adapter does not handle a failed publish() or (un)subscribe: while Redis is down or
  // the client closing, each would become an unhandled rejection. And a broadcast gives the
  // event to this replica's own sockets only once Redis has taken the publish: a Redis that
  // hangs must not hold them back. Other replicas' sockets re-read over REST.
  const waitMs = opts.publishWaitMs ?? PUBLISH_WAIT_MS;
  guard(pub, 'publish', onError, 0, waitMs);
  guard(pub, 'sPublish', onError, 0, waitMs);
  guard(sub, 'sSubscribe', onError, undefined);
  guard(sub, 'sUnsubscribe', onError, undefined);
  const adapter =
    mode === 'sharded'
      ? createShardedAdapter(pub, sub, { channelPrefix: key, subscriptionMode: 'dynamic' })
      : createAdapter(pub, sub, { key });
  let closing: Promise<void> | undefined;
  return {
    adapter,
    mode,
    close() {
      closing ??= (async () => {
        await Promise.allSettled([sub.close(), pub.close()]);
      })();
      return closing;
    },
  };
}
