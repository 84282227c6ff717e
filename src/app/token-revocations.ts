/**
 * Token revocation (docs/security.md, "Revocation"): each person has a "tokens not before"
 * stamp in the store; a token issued at or before it is refused (src/auth/tokens.ts
 * `isRevoked`). The person moves their own, a moderator anyone's (audited). Moving it also
 * cuts off the person's sockets on every replica at once (`onRevoked`).
 *
 * Requests read the stamps through a per-replica cache of `cacheMs`: a revocation on this
 * replica is seen here at once, on the others within `cacheMs` (the staleness bound). Lookups
 * of the same people that arrive while one is running share its store read; the cache holds
 * at most `maxCached` people (the oldest entries leave first).
 */
import type { RevocationCheck } from '../auth/tokens.js';
import type { TokenStore } from '../store/port-tokens.js';

interface Entry {
  /** performance.now() when read */
  at: number;
  /** the stamp, ms; undefined: never revoked */
  stampMs: number | undefined;
}

export interface TokenRevocationOptions {
  /** how long a stamp read serves requests on this replica (ms); 0: every request reads the store */
  cacheMs: number;
  /** people whose stamps are kept at most; default 100,000 */
  maxCached?: number;
  /** the stamp moved: cut off the person's sockets (every replica) */
  onRevoked?: (userId: string) => void;
}

export class TokenRevocations implements RevocationCheck {
  private readonly cache = new Map<string, Entry>();
  private readonly running = new Map<string, Promise<Map<string, Date>>>();
  private readonly maxCached: number;
  onRevoked: (userId: string) => void;

  constructor(
    private readonly store: TokenStore,
    private readonly opts: TokenRevocationOptions,
  ) {
    this.maxCached = opts.maxCached ?? 100_000;
    this.onRevoked = opts.onRevoked ?? (() => undefined);
  }

  /** Revoke every token of `userId` issued until now; `moderator`: who did it (audited). Returns the new stamp. */
  async revoke(userId: string, moderator?: string): Promise<Date> {
    const stamp = await this.store.revokeTokens(userId, moderator);
    this.remember(userId, stamp.getTime());
    this.onRevoked(userId);
    return stamp;
  }

  async notBefore(userIds: readonly string[], o: { fresh?: boolean } = {}): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const now = performance.now();
    const wanted: string[] = [];
    for (const id of new Set(userIds)) {
      const e = o.fresh ? undefined : this.cache.get(id);
      if (e && now - e.at < this.opts.cacheMs) {
        if (e.stampMs !== undefined) out.set(id, e.stampMs);
      } else wanted.push(id);
    }
    if (wanted.length === 0) return out;
    const read = await this.read(wanted);
    for (const id of wanted) {
      const stampMs = read.get(id)?.getTime();
      if (stampMs !== undefined) out.set(id, stampMs);
    }
    return out;
  }

  /** One store read for `ids`; a single person's concurrent lookups share it. */
  private async read(ids: string[]): Promise<Map<string, Date>> {
    const single = ids.length === 1 ? ids[0] : undefined;
    const shared = single === undefined ? undefined : this.running.get(single);
    if (shared) return shared;
    const p = this.store.tokensNotBefore(ids).then((stamps) => {
      for (const id of ids) this.remember(id, stamps.get(id)?.getTime(), true);
      return stamps;
    });
    if (single !== undefined) {
      this.running.set(single, p);
      void p.then(
        () => this.running.delete(single),
        () => this.running.delete(single),
      );
    }
    return p;
  }

  /** `fromRead`: a read never takes a stamp back (a revocation here may have landed while it ran). */
  private remember(userId: string, stampMs: number | undefined, fromRead = false): void {
    const cur = this.cache.get(userId);
    const keep = fromRead && cur?.stampMs !== undefined && (stampMs === undefined || stampMs < cur.stampMs) ? cur.stampMs : stampMs;
    this.cache.delete(userId);
    if (this.cache.size >= this.maxCached) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
    this.cache.set(userId, { at: performance.now(), stampMs: keep });
  }
}
