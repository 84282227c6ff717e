/**
 * Classifies driver errors for the MongoDB store. Read through `mongoose.mongo` (the
 * driver mongoose ships) so the adapter depends on mongoose only.
 */
import mongoose from 'mongoose';
import { Unavailable } from '../../domain/errors.js';

const {
  MongoBulkWriteError,
  MongoServerError,
  MongoWriteConcernError,
  MongoNetworkError,
  MongoServerSelectionError,
  MongoNotConnectedError,
  MongoTopologyClosedError,
  MongoClientClosedError,
  MongoOperationTimeoutError,
} = mongoose.mongo;

const DUPLICATE_KEY = 11000;

/** A unique index refused the write (also: every write error of an unordered bulk insert is one). */
export function isDuplicateKey(err: unknown): boolean {
  if (err instanceof MongoBulkWriteError) {
    const listed = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
    // when the write concern failed too, the batch's write errors are only in its result
    const errors = listed.length > 0 ? listed : err.result.getWriteErrors();
    return errors.length > 0 && errors.every((e) => e.code === DUPLICATE_KEY);
  }
  return err instanceof MongoServerError && err.code === DUPLICATE_KEY;
}

/**
 * The write reached the primary but its write concern was not confirmed (wtimeout,
 * code 64, or any writeConcernError): it may be applied, may still replicate, or may be
 * rolled back. The outcome is unknown; callers re-read before deciding.
 */
export function isWriteConcernError(err: unknown): boolean {
  if (err instanceof MongoWriteConcernError) return true;
  if (err instanceof MongoBulkWriteError) return err.result?.getWriteConcernError() !== undefined;
  return err instanceof MongoServerError && (err.code === 64 || err.errInfo?.wtimeout === true);
}

/**
 * Errors of the connection itself that the driver lets through unwrapped now and then (seen: a
 * write on a socket the server had just closed, `EPIPE` "This socket has been ended by the
 * other party", when the server went away between the driver's check and its write).
 */
const SOCKET_ERROR_CODES = new Set([
  'EPIPE',
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'ENOTCONN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
const isSocketError = (err: unknown): boolean => {
  const code: unknown = err instanceof Error ? (err as Error & { code?: unknown }).code : undefined;
  return typeof code === 'string' && SOCKET_ERROR_CODES.has(code);
};

/** The server (or the primary) cannot be reached: readiness fails and requests answer 503. */
export function isUnreachable(err: unknown): boolean {
  // a bulk insert wraps the driver's own error (a dropped connection, say) and keeps it as errorResponse
  if (err instanceof MongoBulkWriteError && err.errorResponse instanceof mongoose.mongo.MongoError) return isUnreachable(err.errorResponse);
  return (
    isSocketError(err) ||
    err instanceof MongoNetworkError ||
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNotConnectedError ||
    err instanceof MongoTopologyClosedError ||
    err instanceof MongoClientClosedError ||
    err instanceof MongoOperationTimeoutError
  );
}

/**
 * Server error codes that say "not now" rather than "never": the primary is stepping down or
 * shutting down, the operation ran out of its time limit (maxTimeMS) or lost a write conflict
 * or a lock wait, the server could not reach another member. The same request later can succeed.
 */
const TRANSIENT_CODES = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  24, // LockTimeout
  46, // LockBusy
  50, // MaxTimeMSExpired
  89, // NetworkTimeout
  91, // ShutdownInProgress
  112, // WriteConflict
  189, // PrimarySteppedDown
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);
const TRANSIENT_LABELS = ['RetryableWriteError', 'TransientTransactionError'];

/** The server refused for a reason that passes (see TRANSIENT_CODES), or labelled the error retryable. */
export function isTransientServerError(err: unknown): boolean {
  if (!(err instanceof MongoServerError)) return false;
  if (TRANSIENT_LABELS.some((l) => err.hasErrorLabel(l))) return true;
  if (typeof err.code === 'number' && TRANSIENT_CODES.has(err.code)) return true;
  // a bulk write keeps the command's own error as errorResponse
  return err instanceof MongoBulkWriteError && err.errorResponse instanceof MongoServerError && err.errorResponse !== err
    ? isTransientServerError(err.errorResponse)
    : false;
}

/**
 * `err` as the store being unavailable when it is one, so that callers (503 + Retry-After, the
 * sweep's backoff: domain/errors.ts isTransient) know a later try can succeed: the server not
 * reachable, a write it did not confirm that no re-read settled, a transient server refusal.
 * Anything else (a bug, a unique index, a validation error) is `err` itself.
 */
export function unavailableOr(op: string, err: unknown): unknown {
  if (isUnreachable(err)) return Unavailable('store_unavailable', `${op}: MongoDB is not reachable`, err);
  if (isWriteConcernError(err))
    return Unavailable('store_write_unconfirmed', `${op}: the database did not confirm a write in time; its outcome is unknown`, err);
  if (isTransientServerError(err)) return Unavailable('store_busy', `${op}: MongoDB refused for now (try again later)`, err);
  return err;
}

/** `mongodb://user:secret@h1,h2/db?…` → `mongodb://h1,h2/db` for messages and logs. */
export function redactUri(uri: string): string {
  return uri.replace(/\/\/[^@/]*@/, '//').replace(/\?.*$/, '');
}
