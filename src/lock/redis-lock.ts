/**
 * Lock adapter for cluster mode: one Redis key per lock name holding the holder's
 * token (`SET NX PX`), token-checked release/extend, and a per-name fence counter.
 * Both keys of a lock carry the name as a hash tag (`<prefix>{name}`,
 * `<prefix>{name}:fence`), so each script touches one slot and runs on Redis Cluster.
 * The ./redis/*.lua scripts are loaded at connect and again on NOSCRIPT (Redis forgets
 * them on restart or failover).
 *
 * Redis keeps nothing durable: after a restart locks are free (the lock only saves work;
 * the store's compare-and-swap keeps escalations exactly-once) and the fence counter is
 * gone. The first holder after that seeds it from `fenceFloor` (the store's highest
 * recorded fence), so fences keep increasing across Redis restarts.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { createClient } from 'redis';
import { Unavailable } from '../domain/errors.js';
import type { Lease, Lock } from './port.js';

export interface RedisLockOptions {
  /** `redis://…` URL of the Redis that holds the locks. Required. */
  url: string;
  /** Prefix of every key written: lock `n` is `<prefix>{n}`, its fence `<prefix>{n}:fence`. Default `vigil:lock:`. */
  keyPrefix?: string;
  /**
   * The highest fence already used (the store's record), read only when the fence counter
   * is missing (a restarted or flushed Redis). Default: 0, i.e. fences restart at 1.
   */
  fenceFloor?: () => Promise<number>;
  /** Goes into every token (`<replicaId>:<uuid>`), so the lock key names the replica that holds it. Default `<hostname>:<pid>`. */
  replicaId?: string;
  /** How long `connect()` waits for the first connection and the script loads; also each TCP connect attempt's limit. Default 5000. */
  connectTimeoutMs?: number;
  /** An operation without an answer after this long throws and the connection is recycled, so a hung Redis cannot stall a tick. Default 2000. */
  commandTimeoutMs?: number;
  /** Cap of the (jittered, exponential) delay between reconnect attempts, which never stop. Default 2000. */
  maxReconnectDelayMs?: number;
  /** Receives every client error, failed reconnects included; the client recovers by itself. Default: ignore. */
  onError?: (err: Error) => void;
}

type Client = ReturnType<typeof newClient>;
type ScriptName = 'acquire' | 'release' | 'extend' | 'seed';

// Read once per process; the build copies src/**/*.lua next to the compiled file.
const SOURCES: Readonly<Record<ScriptName, string>> = {
  acquire: readFileSync(new URL('./redis/acquire.lua', import.meta.url), 'utf8'),
  release: readFileSync(new URL('./redis/release.lua', import.meta.url), 'utf8'),
  extend: readFileSync(new URL('./redis/extend.lua', import.meta.url), 'utf8'),
  seed: readFileSync(new URL('./redis/seed.lua', import.meta.url), 'utf8'),
};

export class RedisLock implements Lock {
  private closing: Promise<void> | undefined;
  private recycling = false;

  private constructor(
    private readonly client: Client,
    private readonly options: Required<RedisLockOptions>,
    private readonly shas: Record<ScriptName, string>,
  ) {}

  /** Connect, load the scripts, and return the lock; rejects (`unavailable`) when Redis cannot be reached in time. */
  static async connect(options: RedisLockOptions): Promise<RedisLock> {
    const o: Required<RedisLockOptions> = {
      url: options.url,
      keyPrefix: options.keyPrefix ?? 'vigil:lock:',
      fenceFloor: options.fenceFloor ?? (async () => 0),
      replicaId: options.replicaId ?? `${hostname()}:${process.pid}`,
      connectTimeoutMs: options.connectTimeoutMs ?? 5_000,
      commandTimeoutMs: options.commandTimeoutMs ?? 2_000,
      maxReconnectDelayMs: options.maxReconnectDelayMs ?? 2_000,
      onError: options.onError ?? (() => {}),
    };
    let lastError: Error | undefined;
    const client = newClient(o);
    // Without a listener, an 'error' event would crash the process.
    client.on('error', (err: unknown) => {
      lastError = err instanceof Error ? err : new Error(String(err));
      o.onError(lastError);
    });

    const start = async () => {
      await client.connect();
      return {
        acquire: await client.scriptLoad(SOURCES.acquire),
        release: await client.scriptLoad(SOURCES.release),
        extend: await client.scriptLoad(SOURCES.extend),
        seed: await client.scriptLoad(SOURCES.seed),
      };
    };
    try {
      const shas = await withDeadline(start(), o.connectTimeoutMs, () => lastError);
      return new RedisLock(client, o, shas);
    } catch (err) {
      client.destroy();
      throw Unavailable('lock_unavailable', 'redis lock: cannot connect to Redis', err);
    }
  }

  async acquire(name: string, ttlMs: number): Promise<Lease | null> {
    const key = this.key(name);
    const token = `${this.options.replicaId}:${randomUUID()}`;
    const keys = [key, `${key}:fence`];
    let reply = await this.run('acquire', name, keys, [token, px(ttlMs)]);
    if (reply === null) return null;
    if (Number(reply) === 0) {
      // the counter is gone (Redis restarted or flushed): continue above the store's highest fence
      let floor: number;
      try {
        floor = await this.options.fenceFloor();
      } catch (err) {
        await this.run('release', name, [key], [token]).catch(() => undefined);
        throw Unavailable('lock_unavailable', `redis lock: cannot read the highest recorded fence to seed "${name}"`, err);
      }
      reply = await this.run('seed', name, keys, [token, String(Math.max(0, Math.floor(floor)))]);
      if (reply === null) return null; // lapsed meanwhile: someone else may hold it now
    }
    return this.lease(name, key, token, Number(reply));
  }

  /** Close the connection (pending commands finish first); safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (!this.client.isOpen) return;
      try {
        await this.client.close();
      } catch {
        this.client.destroy();
      }
    })();
    return this.closing;
  }

  private lease(name: string, key: string, token: string, fence: number): Lease {
    let released = false;
    return {
      token,
      fence,
      extend: async (ttlMs: number) => {
        if (released) return false;
        return (await this.run('extend', name, [key], [token, px(ttlMs)])) === 1;
      },
      release: async () => {
        if (released) return;
        await this.run('release', name, [key], [token]);
        released = true;
      },
    };
  }

  /** `{name}` is a hash tag: the lock key and its fence key land in the same Redis Cluster slot. */
  private key(name: string): string {
    return `${this.options.keyPrefix}{${name}}`;
  }

  /** EVALSHA; on NOSCRIPT (Redis restarted or flushed its script cache) load the script again and retry once. */
  private run(script: ScriptName, name: string, keys: string[], args: string[]): Promise<unknown> {
    const evalsha = () => this.client.sendCommand<unknown>(['EVALSHA', this.shas[script], String(keys.length), ...keys, ...args]);
    return this.guard(script, name, async () => {
      try {
        return await evalsha();
      } catch (err) {
        if (!(err instanceof Error && err.message.startsWith('NOSCRIPT'))) throw err;
        this.shas[script] = await this.client.scriptLoad(SOURCES[script]);
        return await evalsha();
      }
    });
  }

  /**
   * Every operation answers within `commandTimeoutMs` or throws `unavailable`.
   * node-redis's own command timeout stops counting once a command is written, so a
   * Redis that accepts bytes but never answers (frozen, half-open connection) would
   * hang us; on our deadline we drop the connection and reconnect in the background.
   */
  private async guard<T>(op: string, name: string, work: () => Promise<T>): Promise<T> {
    const timedOut = new Error(`no answer within ${this.options.commandTimeoutMs} ms`);
    try {
      return await withDeadline(work(), this.options.commandTimeoutMs, () => undefined, timedOut);
    } catch (err) {
      if (err === timedOut) this.recycle();
      throw Unavailable('lock_unavailable', `redis lock: ${op} of "${name}" failed`, err);
    }
  }

  private recycle(): void {
    if (this.recycling || this.closing || !this.client.isReady) return;
    this.recycling = true;
    this.client.destroy(); // fails what is in flight; new commands fail fast until reconnected
    this.client
      .connect() // retries forever under reconnectStrategy; close() ends it
      .catch(() => {})
      .finally(() => {
        this.recycling = false;
      });
  }
}

function newClient(o: Required<RedisLockOptions>) {
  return createClient({
    url: o.url,
    // While disconnected, commands fail at once instead of queueing until Redis is back:
    // a tick must learn now that it has no lock, not hang.
    disableOfflineQueue: true,
    commandOptions: { timeout: o.commandTimeoutMs },
    socket: {
      connectTimeout: o.connectTimeoutMs,
      // Never give up: a safety service must recover by itself when Redis returns.
      reconnectStrategy: (retries) => reconnectDelay(retries, o.maxReconnectDelayMs),
    },
  });
}

/** Redis wants a positive integer number of milliseconds. */
function px(ttlMs: number): string {
  if (!(ttlMs > 0) || !Number.isFinite(ttlMs)) throw new RangeError(`lock ttl must be a positive number of ms, got ${ttlMs}`);
  return String(Math.ceil(ttlMs));
}

/** 50 ms doubling up to `cap`, with jitter so replicas do not reconnect in lockstep. */
function reconnectDelay(retries: number, cap: number): number {
  const base = Math.min(cap, 50 * 2 ** Math.min(retries, 16));
  return Math.round(base / 2 + (Math.random() * base) / 2);
}

/** Settle with `work`, or reject after `ms` (with `timeout`, or an error naming the last known cause). */
async function withDeadline<T>(work: Promise<T>, ms: number, lastError: () => Error | undefined, timeout?: Error): Promise<T> {
  // `work` may settle after we gave up (its connection is destroyed then): keep that quiet.
  work.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeout ?? new Error(`no connection within ${ms} ms`, { cause: lastError() })), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
