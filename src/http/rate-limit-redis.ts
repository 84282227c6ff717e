/**
 * Cluster mode: rate-limit counters shared by every replica, in Redis (rate-limit-redis),
 * under `vigil:rl:<budget>:`. Its own node-redis client, which never queues commands while
 * Redis is away: a counter that cannot be reached fails at once and the limiter falls back
 * (rate-limit.ts).
 */
import type { Logger } from 'pino';
import { RedisStore, type RedisReply } from 'rate-limit-redis';
import { createClient } from 'redis';
import type { Budget, LimitStoreFactory } from './rate-limit.js';

export interface RedisLimitStores {
  storeFor: LimitStoreFactory;
  close(): Promise<void>;
}

export async function connectRedisLimitStores(url: string, log: Logger, prefix = 'vigil:rl:'): Promise<RedisLimitStores> {
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: { connectTimeout: 5000, reconnectStrategy: (n: number) => Math.min(2000, 50 * 2 ** Math.min(n, 6)) },
  });
  let warned = false;
  client.on('error', (err: unknown) => {
    if (!warned) log.warn({ err: err instanceof Error ? err.message : String(err) }, 'rate limits: Redis connection error');
    warned = true;
  });
  client.on('ready', () => {
    warned = false;
  });
  await client.connect();
  let closing: Promise<void> | undefined;
  return {
    storeFor: (budget: Budget) =>
      new RedisStore({
        prefix: `${prefix}${budget}:`,
        sendCommand: (...args: string[]) => client.sendCommand(args) as Promise<RedisReply>,
      }),
    close() {
      closing ??= client.close().catch(() => undefined);
      return closing;
    },
  };
}
