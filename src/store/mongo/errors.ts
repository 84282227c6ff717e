/**
 * Classifies driver errors for the MongoDB store. Read through `mongoose.mongo` (the
 * driver mongoose ships) so the adapter depends on mongoose only.
 */
import mongoose from 'mongoose';

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

/** The server (or the primary) cannot be reached: readiness fails and requests answer 503. */
export function isUnreachable(err: unknown): boolean {
  // a bulk insert wraps the driver's own error (a dropped connection, say) and keeps it as errorResponse
  if (err instanceof MongoBulkWriteError && err.errorResponse instanceof mongoose.mongo.MongoError) return isUnreachable(err.errorResponse);
  return (
    err instanceof MongoNetworkError ||
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNotConnectedError ||
    err instanceof MongoTopologyClosedError ||
    err instanceof MongoClientClosedError ||
    err instanceof MongoOperationTimeoutError
  );
}

/** `mongodb://user:secret@h1,h2/db?…` → `mongodb://h1,h2/db` for messages and logs. */
export function redactUri(uri: string): string {
  return uri.replace(/\/\/[^@/]*@/, '//').replace(/\?.*$/, '');
}
