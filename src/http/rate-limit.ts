/**
 * Request budgets (express-rate-limit), checked before any body is read:
 *   - per person (token `sub`) for every authenticated route;
 *   - per person for check-ins (safe, cancel, extend, the panic button): a budget of their own, so a person's
 *     flood of other routes never starves their check-ins, and nobody else's traffic is
 *     counted against it;
 *   - per client address for requests without a valid token, and for Socket.IO handshakes
 *     (`chargeAddress`: one budget, one store).
 * A refusal is 429 `rate_limited` with `Retry-After`. A flooding client's refusals are held
 * for `holdMs` before they are answered (at most `maxHeld` at once) so that it cannot spin.
 *
 * The counters live in memory (embedded) or in a shared store (cluster: Redis, built by
 * main.ts and passed in as `storeFor`). When that store fails or is slow, every budget,
 * check-ins included, counts on this replica's memory instead: a check-in is never refused
 * because Redis is down (its budget on this replica starts afresh), and one token cannot
 * flood safe/cancel/extend writes while Redis is away either.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ipKeyGenerator, MemoryStore, rateLimit, type Options, type Store as LimitStore } from 'express-rate-limit';
import type { Logger } from 'pino';
import type { RateLimitConfig } from '../config.js';
import { sendError } from './errors.js';

export type Budget = 'person' | 'checkin' | 'ip';

/** a shared counter store for one budget (each budget needs its own instance) */
export type LimitStoreFactory = (budget: Budget) => LimitStore;

export interface RateLimits {
  /** picks the budget of a request: call after the token has been read (req.principal) */
  middleware: RequestHandler;
  /**
   * Charges one Socket.IO handshake to the budget of its client address (the one requests
   * without a token spend): `retryAfterSeconds` when it is spent, else undefined.
   */
  chargeAddress(address: string): Promise<{ retryAfterSeconds: number } | undefined>;
  /** refusals being held right now */
  held(): number;
}

/**
 * The check-in budget: POST /v1/timers/:id/{safe,cancel,extend}, the panic button POST /v1/sos
 * and "I'm safe" on an incident POST /v1/incidents/:id/safe, spelled in any case (Express routes
 * case-insensitively). A person's own traffic on other routes never refuses them.
 */
const CHECK_IN = /^\/v1\/(timers\/[^/]+\/(safe|cancel|extend)|sos|incidents\/[^/]+\/safe)\/?$/i;
export const isCheckIn = (req: Request) => req.method === 'POST' && CHECK_IN.test(req.path);

function withTimeout<T>(p: Promise<T> | T, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`rate-limit store did not answer within ${ms} ms`)), ms);
    Promise.resolve(p).then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (err: unknown) => {
        clearTimeout(t);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

/** The shared store, bounded in time; on failure this replica's memory counts instead. */
class GuardedStore implements LimitStore {
  localKeys = false;
  constructor(
    private readonly primary: LimitStore,
    private readonly fallback: MemoryStore,
    private readonly timeoutMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}
  init(o: Options) {
    void Promise.resolve(this.primary.init?.(o)).catch(this.onError);
    this.fallback.init(o);
  }
  async increment(key: string) {
    try {
      return await withTimeout(this.primary.increment(key), this.timeoutMs);
    } catch (err) {
      this.onError(err);
      return this.fallback.increment(key);
    }
  }
  async decrement(key: string) {
    await withTimeout(this.primary.decrement(key), this.timeoutMs).catch(this.onError);
  }
  async resetKey(key: string) {
    await withTimeout(this.primary.resetKey(key), this.timeoutMs).catch(this.onError);
    await this.fallback.resetKey(key);
  }
  shutdown() {
    void this.fallback.shutdown();
  }
}

export function createRateLimits(c: RateLimitConfig, log: Logger, storeFor?: LimitStoreFactory): RateLimits & { close(): void } {
  let held = 0;
  let lastStoreWarning = 0;
  const storeError = (err: unknown) => {
    // at most one line a minute while the shared store is away
    if (Date.now() - lastStoreWarning < 60_000) return;
    lastStoreWarning = Date.now();
    log.warn(
      { err: err instanceof Error ? err.message : String(err) },
      'rate limits: shared store unavailable (every budget, check-ins included, counts on this replica)',
    );
  };
  const stores: { shutdown?: () => void | Promise<void> }[] = [];

  const refuse = (budget: Budget) => (req: Request, res: Response) => {
    // one line per exhausted budget and window, not one per refused request
    const info = (req as Request & { rateLimit?: { used: number; limit: number } }).rateLimit;
    if (info && info.used === info.limit + 1)
      log.info({ reqId: req.requestId, budget, userId: req.principal?.userId }, 'request budget exhausted');
    const answer = () => {
      if (res.writableEnded || res.destroyed) return;
      sendError(res, 429, 'rate_limited', `too many requests (${budget} budget); retry after the number of seconds in Retry-After`, {
        budget,
      });
    };
    if (c.holdMs === 0 || held >= c.maxHeld) return answer();
    held++;
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      held--;
      clearTimeout(t);
      req.socket.off('close', release);
      answer();
    };
    // jittered (½–1½ × holdMs): held refusals released on the same tick would come back as one burst
    const t = setTimeout(release, Math.round(c.holdMs * (0.5 + Math.random())));
    req.socket.once('close', release);
  };

  const limiter = (budget: Budget, limit: number, key: (req: Request) => string, store?: LimitStore) => {
    store ??= storeFor ? new GuardedStore(storeFor(budget), new MemoryStore(), c.redisTimeoutMs, storeError) : undefined;
    const handler = rateLimit({
      windowMs: c.windowMs,
      limit,
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      keyGenerator: key,
      handler: refuse(budget),
      passOnStoreError: true,
      ...(store ? { store } : {}),
      logger: { error: storeError, warn: storeError },
      // keyGeneratorIpFallback reads the key's source for `req.ip` without `ipKeyGenerator`: the address
      // budget's key does apply it (addressKey), and the false alarm went out as "shared store unavailable"
      validate: { trustProxy: false, xForwardedForHeader: false, keyGeneratorIpFallback: false },
    });
    stores.push(store ?? {});
    return handler;
  };

  const person = limiter('person', c.perPerson, (req) => `p:${req.principal?.userId ?? ''}`);
  const checkIn = limiter('checkin', c.checkInsPerPerson, (req) => `c:${req.principal?.userId ?? ''}`);
  // its store is shared with the Socket.IO handshakes (chargeAddress): one budget per address
  const addressStore: LimitStore = storeFor
    ? new GuardedStore(storeFor('ip'), new MemoryStore(), c.redisTimeoutMs, storeError)
    : new MemoryStore();
  const addressKey = (address: string) => `a:${ipKeyGenerator(address)}`;
  const byAddress = limiter('ip', c.perIp, (req) => addressKey(req.ip ?? req.socket.remoteAddress ?? 'unknown'), addressStore);

  return {
    middleware: (req: Request, res: Response, next: NextFunction) => {
      if (!req.principal) return byAddress(req, res, next);
      return isCheckIn(req) ? checkIn(req, res, next) : person(req, res, next);
    },
    chargeAddress: async (address) => {
      // as the limiter does: a store that fails lets the handshake through (passOnStoreError)
      const hits = await Promise.resolve()
        .then(() => addressStore.increment(addressKey(address)))
        .catch((err: unknown) => void storeError(err));
      if (!hits || hits.totalHits <= c.perIp) return undefined;
      const resetMs = hits.resetTime ? hits.resetTime.getTime() - Date.now() : c.windowMs;
      return { retryAfterSeconds: Math.max(1, Math.ceil(resetMs / 1000)) };
    },
    held: () => held,
    close: () => {
      for (const s of stores) void s.shutdown?.();
    },
  };
}
