/**
 * Socket.IO Redis adapter (cluster mode): events emitted on one replica reach sockets
 * on every replica. The adapter does not replay what it missed while Redis was away;
 * clients re-read over REST with `since=<cursor>` after a reconnect.
 */
import { createAdapter } from '@socket.io/redis-adapter';
import type { Logger } from 'pino';
import { createClient } from 'redis';

export interface RedisFanout {
  adapter: ReturnType<typeof createAdapter>;
  close(): Promise<void>;
}

export async function connectRedisFanout(
  url: string,
  log: Logger,
  opts: { keyPrefix?: string; connectTimeoutMs?: number } = {},
): Promise<RedisFanout> {
  const pub = createClient({
    url,
    disableOfflineQueue: true,
    socket: { connectTimeout: opts.connectTimeoutMs ?? 5000, reconnectStrategy: (n: number) => Math.min(2000, 50 * 2 ** Math.min(n, 6)) },
  });
  const sub = pub.duplicate();
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
  // The adapter does not await publish(): while Redis is down each call would become an
  // unhandled rejection. Sockets on this replica still get the event; others re-read over REST.
  const publish = pub.publish.bind(pub);
  Object.defineProperty(pub, 'publish', {
    configurable: true,
    value: (...args: Parameters<typeof publish>) =>
      publish(...args).catch((err: unknown) => {
        onError(err);
        return 0;
      }),
  });
  const adapter = createAdapter(pub, sub, { key: opts.keyPrefix ?? 'vigil:socket.io' });
  let closing: Promise<void> | undefined;
  return {
    adapter,
    close() {
      closing ??= (async () => {
        await Promise.allSettled([sub.close(), pub.close()]);
      })();
      return closing;
    },
  };
}
