/**
 * The one small set of errors every layer raises. HTTP maps them in one place
 * (src/http/errors.ts); stores translate their driver errors into these. Each code is
 * declared, with its kind and meaning, in ./error-codes.ts.
 */
import type { CodeOf, DomainCode, DomainErrorKind } from './error-codes.js';

export type { DomainCode, DomainErrorKind };

/** A kind and one of the codes declared with that kind, then the message, details and cause. */
type DomainErrorArgs = {
  [K in DomainErrorKind]: [kind: K, code: CodeOf<K>, message: string, details?: Record<string, unknown>, options?: { cause?: unknown }];
}[DomainErrorKind];

export class DomainError extends Error {
  readonly kind: DomainErrorKind;
  /** machine-readable, stable, e.g. `timer_not_live` */
  readonly code: DomainCode;
  readonly details?: Record<string, unknown>;

  constructor(...[kind, code, message, details, options]: DomainErrorArgs) {
    super(message, options);
    this.name = 'DomainError';
    this.kind = kind;
    this.code = code;
    this.details = details;
  }
}

export const NotFound = (code: CodeOf<'not_found'>, message: string, details?: Record<string, unknown>) =>
  new DomainError('not_found', code, message, details);
export const Conflict = (code: CodeOf<'conflict'>, message: string, details?: Record<string, unknown>) =>
  new DomainError('conflict', code, message, details);
export const Invalid = (code: CodeOf<'invalid'>, message: string, details?: Record<string, unknown>) =>
  new DomainError('invalid', code, message, details);
export const Unavailable = (code: CodeOf<'unavailable'>, message: string, cause?: unknown) =>
  new DomainError('unavailable', code, message, undefined, { cause });
/** Too many requests: `retryAfterSeconds` becomes the Retry-After header. */
export const RateLimited = (code: CodeOf<'rate_limited'>, message: string, retryAfterSeconds: number) =>
  new DomainError('rate_limited', code, message, { retryAfterSeconds });

/**
 * The store (or the lock) was unavailable: busy, locked, closed, unreachable, out of time, or
 * a write it did not confirm. Trying the same thing again later can succeed, so a retry loop
 * backs off and goes on instead of counting it as a failure of the work itself (the stores map
 * their driver errors to `Unavailable`: store/sqlite/errors.ts, store/mongo/errors.ts). Anything
 * else (a bug, a constraint the data cannot meet) is not. Looks through `cause` wrappers.
 */
export function isTransient(err: unknown): boolean {
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    if (e instanceof DomainError) return e.kind === 'unavailable';
    e = e instanceof Error ? e.cause : undefined;
  }
  return false;
}
