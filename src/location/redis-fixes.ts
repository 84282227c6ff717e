/**
 * Latest fixes in Redis (cluster mode): `vigil:fix:<timerId>` holds the fix as JSON with a
 * time to live (`SET … PX`). Every command fails fast while Redis is away (no offline queue,
 * a deadline per command), so a caller falls back to the store instead of waiting.
 */
import { createClient } from 'redis';
import type { StoredFix } from '../domain/location.js';
import type { LatestFixes } from './port.js';

export interface RedisFixesOptions {
  url: string;
  /** time to live of each latest fix (ms) */
  ttlMs: number;
  /** key prefix; default `vigil:fix:` */
  keyPrefix?: string;
  /** an answer later than this counts as a failure (ms); default 1000 */
  commandTimeoutMs?: number;
  /** connect deadline (ms); default 5000 */
  connectTimeoutMs?: number;
  /** every client error (reconnects included); default: ignore */
  onError?: (err: Error) => void;
}

interface FixJson {
  timerId: string;
  userId: string;
  lat: number;
  lng: number;
  accuracyM?: number;
  at: string;
}

const parse = (raw: string): StoredFix => {
  const j = JSON.parse(raw) as FixJson;
  return {
    timerId: j.timerId,
    userId: j.userId,
    lat: j.lat,
    lng: j.lng,
    at: new Date(j.at),
    ...(j.accuracyM === undefined ? {} : { accuracyM: j.accuracyM }),
  };
};

type Client = ReturnType<typeof newClient>;

function newClient(url: string, connectTimeoutMs: number) {
  return createClient({
    url,
    // while Redis is away commands fail at once instead of queueing: callers fall back to the store
    disableOfflineQueue: true,
    socket: { connectTimeout: connectTimeoutMs, reconnectStrategy: (n: number) => Math.min(2000, 50 * 2 ** Math.min(n, 6)) },
  });
}

export class RedisFixes implements LatestFixes {
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly client: Client,
    private readonly o: Required<Omit<RedisFixesOptions, 'onError'>>,
  ) {}

  static async connect(options: RedisFixesOptions): Promise<RedisFixes> {
    const o = {
      url: options.url,
      ttlMs: options.ttlMs,
      keyPrefix: options.keyPrefix ?? 'vigil:fix:',
      commandTimeoutMs: options.commandTimeoutMs ?? 1000,
      connectTimeoutMs: options.connectTimeoutMs ?? 5000,
    };
    const client = newClient(o.url, o.connectTimeoutMs);
    client.on('error', (err: unknown) => options.onError?.(err instanceof Error ? err : new Error(String(err))));
    try {
      await deadline(client.connect(), o.connectTimeoutMs);
    } catch (err) {
      client.destroy();
      throw err;
    }
    return new RedisFixes(client, o);
  }

  async get(timerId: string): Promise<StoredFix | null> {
    const raw = await deadline(this.client.get(this.o.keyPrefix + timerId), this.o.commandTimeoutMs);
    return typeof raw === 'string' ? parse(raw) : null;
  }

  async getMany(timerIds: string[]): Promise<Map<string, StoredFix>> {
    const out = new Map<string, StoredFix>();
    if (timerIds.length === 0) return out;
    const raws = await deadline(this.client.mGet(timerIds.map((id) => this.o.keyPrefix + id)), this.o.commandTimeoutMs);
    raws.forEach((raw, i) => {
      const fix = typeof raw === 'string' ? parse(raw) : null;
      if (fix) out.set(timerIds[i]!, fix);
    });
    return out;
  }

  async set(fix: StoredFix): Promise<void> {
    const json: FixJson = {
      timerId: fix.timerId,
      userId: fix.userId,
      lat: fix.lat,
      lng: fix.lng,
      at: fix.at.toISOString(),
      ...(fix.accuracyM === undefined ? {} : { accuracyM: fix.accuracyM }),
    };
    await deadline(this.client.set(this.o.keyPrefix + fix.timerId, JSON.stringify(json), { PX: this.o.ttlMs }), this.o.commandTimeoutMs);
  }

  close(): Promise<void> {
    this.closing ??= this.client.close().catch(() => {
      this.client.destroy();
    });
    return this.closing;
  }
}

async function deadline<T>(work: Promise<T>, ms: number): Promise<T> {
  work.catch(() => {}); // settling after the deadline must stay quiet
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`redis: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
