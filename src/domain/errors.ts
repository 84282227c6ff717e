/**
 * The one small set of errors every layer raises. HTTP maps them in one place
 * (src/http/errors.ts); stores translate their driver errors into these.
 */
export type DomainErrorCode =
  'not_found' | 'conflict' | 'invalid' | 'unauthorized' | 'forbidden' | 'idempotency_mismatch' | 'rate_limited' | 'unavailable';

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorCode,
    /** machine-readable, stable, e.g. `timer_not_live` */
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DomainError';
  }
}

export const NotFound = (code: string, message: string, details?: Record<string, unknown>) =>
  new DomainError('not_found', code, message, details);
export const Conflict = (code: string, message: string, details?: Record<string, unknown>) =>
  new DomainError('conflict', code, message, details);
export const Invalid = (code: string, message: string, details?: Record<string, unknown>) =>
  new DomainError('invalid', code, message, details);
export const Unavailable = (code: string, message: string, cause?: unknown) =>
  new DomainError('unavailable', code, message, undefined, { cause });
/** Too many requests: `retryAfterSeconds` becomes the Retry-After header. */
export const RateLimited = (code: string, message: string, retryAfterSeconds: number) =>
  new DomainError('rate_limited', code, message, { retryAfterSeconds });
