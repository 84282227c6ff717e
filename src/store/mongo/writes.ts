/**
 * What the query modules of the MongoDB store share. A write whose write concern was not
 * confirmed may still commit or roll back: we re-read with readConcern majority and go on
 * only if our write (tagged with a fresh `lastOp`) is there, else throw `Unavailable`
 * (503). Every caller is safe to retry; escalations stay pending and are repaired.
 */
import { randomUUID } from 'node:crypto';
import type mongoose from 'mongoose';
import type { Model, QueryFilter, UpdateQuery } from 'mongoose';
import { Unavailable } from '../../domain/errors.js';
import { isWriteConcernError } from './errors.js';
import type { Models } from './schemas.js';

export type WriteConcern = InstanceType<typeof mongoose.mongo.WriteConcern>;

export interface Ctx {
  readonly m: Models;
  /** the store's clock (server time) */
  now(): Promise<Date>;
  /** write concern of every write */
  readonly wc: WriteConcern;
  /**
   * Most update statements sent in one `update` command (see `bulkUpdate`): unlimited on
   * MongoDB, a few on FerretDB v1. Set once at connect, from the server's buildInfo.
   */
  updatesPerCommand: number;
}

/**
 * Update statements per command on FerretDB v1 (1.24): its `update` handler keeps each
 * statement's query open (a SQLite connection of a pool of 100) until the whole command
 * ends, so one command of ~100 statements, or a few large ones at once, takes every
 * connection and then waits for one more: the server stops answering anyone. Ten keeps
 * the commands of three replicas' sweeps and dispatchers far below the pool.
 */
export const FERRETDB_UPDATES_PER_COMMAND = 10;

export interface BulkUpdated {
  matched: number;
  modified: number;
  upserted: number;
}

/**
 * An unordered bulkWrite of `updateOne` statements, sent in commands of at most
 * `ctx.updatesPerCommand` statements, one after another (one command on MongoDB: the driver
 * itself splits only above maxWriteBatchSize). Unordered as one command would be: every
 * command is sent even when an earlier one failed, then the first error is thrown (a
 * write-concern error before any other: the caller must treat the outcome as unknown).
 */
export async function bulkUpdate<D extends mongoose.mongo.Document>(
  ctx: Ctx,
  model: Model<D>,
  ops: mongoose.AnyBulkWriteOperation<D>[],
): Promise<BulkUpdated> {
  const done: BulkUpdated = { matched: 0, modified: 0, upserted: 0 };
  let failed: { err: unknown } | undefined;
  const size = Math.max(1, ctx.updatesPerCommand);
  for (let i = 0; i < ops.length; i += size) {
    try {
      const chunk = ops.slice(i, i + size) as Parameters<Model<D>['bulkWrite']>[0];
      const r = await model.bulkWrite(chunk, { ordered: false, writeConcern: ctx.wc });
      done.matched += r.matchedCount;
      done.modified += r.modifiedCount;
      done.upserted += r.upsertedCount;
    } catch (err) {
      // the first error, unless a later one leaves an outcome unknown: that one decides what the caller does
      if (!failed || (isWriteConcernError(err) && !isWriteConcernError(failed.err))) failed = { err };
    }
  }
  if (failed) throw failed.err;
  return done;
}

/**
 * Options of an insertMany: mongoose forwards `writeConcern` to the driver although its
 * InsertManyOptions type does not declare it (checked by the command log in the tests).
 */
export function insertOptions(ctx: Ctx, ordered: boolean): mongoose.InsertManyOptions {
  const opts: mongoose.InsertManyOptions & { writeConcern: WriteConcern } = { ordered, throwOnValidationError: true, writeConcern: ctx.wc };
  return opts;
}

/** A fresh token identifying one write (or one claim). */
export const newOp = (): string => randomUUID();

export const unknownOutcome = (cause: unknown) =>
  Unavailable('store_write_unconfirmed', 'the database did not confirm a write in time; its outcome is unknown, retry the request', cause);

/**
 * The majority re-read after the write concern error `unconfirmed`. If the re-read fails
 * too (timeout, no primary, refused), nothing decides the write: its outcome stays unknown.
 */
export async function rereadMajority<T>(unconfirmed: unknown, reread: () => Promise<T>): Promise<T> {
  try {
    return await reread();
  } catch (err) {
    throw unknownOutcome(new AggregateError([unconfirmed, err], 'the write concern was not confirmed and the majority re-read failed'));
  }
}

/**
 * A multi-document write (updateMany tagged with a token) and the read of what it moved. When the
 * write concern is not confirmed, `read` goes to a majority (`majority` true): only what is
 * durable counts as moved, and a failing re-read leaves the outcome unknown.
 */
export async function writeThenRead<T>(write: () => Promise<unknown>, read: (majority: boolean) => Promise<T>): Promise<T> {
  try {
    await write();
  } catch (err) {
    if (!isWriteConcernError(err)) throw err;
    return rereadMajority(err, () => read(true));
  }
  return read(false);
}

/**
 * Await a single-document CAS write tagged with `op`. On an unconfirmed write concern,
 * `reread` (majority) decides: our write visible → its document; anything else → unknown.
 */
export async function settle<D extends { lastOp?: string }>(
  write: Promise<D | null>,
  reread: () => Promise<D | null>,
  op: string,
): Promise<D | null> {
  try {
    return await write;
  } catch (err) {
    if (!isWriteConcernError(err)) throw err;
    const seen = await rereadMajority(err, reread);
    if (seen?.lastOp === op) return seen;
    throw unknownOutcome(err);
  }
}

export interface CasOne<D> {
  /** the document and the states it may be changed from */
  filter: QueryFilter<D>;
  /** the change; it must set `lastOp` to `op` */
  update: (op: string) => UpdateQuery<D>;
  /** finds our document again on the majority re-read (default: `filter`'s `_id`) */
  reread?: (op: string) => QueryFilter<D>;
  upsert?: boolean;
}

/** One tagged `findOneAndUpdate` (returning the document after), settled as above. */
export function casOne<D extends { _id: string; lastOp?: string }>(ctx: Ctx, model: Model<D>, cas: CasOne<D>): Promise<D | null> {
  const op = newOp();
  const write = model
    .findOneAndUpdate(cas.filter, cas.update(op), {
      returnDocument: 'after',
      writeConcern: ctx.wc,
      ...(cas.upsert ? { upsert: true } : {}),
    })
    .lean<D>()
    .exec();
  const reread = cas.reread?.(op) ?? ({ _id: cas.filter._id } as QueryFilter<D>);
  return settle(write, () => model.findOne(reread).readConcern('majority').lean<D>().exec(), op);
}

/** Drop undefined values from an update's `$set` (absent fields stay absent; sparse indexes rely on it). */
export function defined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

/** MongoDB reads `limit(0)` as "no limit"; the port means "nothing". */
export const noneWanted = (limit: number | undefined): boolean => limit !== undefined && limit <= 0;

/** Keyset `(updatedAt, _id)` strictly after `(since, sinceId)`; without an id, strictly after `since`. */
export function changedAfter(since: Date, sinceId: string | undefined) {
  return sinceId === undefined
    ? { updatedAt: { $gt: since } }
    : { $or: [{ updatedAt: { $gt: since } }, { updatedAt: since, _id: { $gt: sinceId } }] };
}
