/**
 * Batched claim in three round trips whatever the batch size (each read asks for the
 * whole answer in its first reply, so no getMore follows; up to the 16 MiB reply cap):
 *   1. candidate ids matching `due`, oldest `order` first (majority read);
 *   2. one updateMany that re-checks `due` per document (each document update is atomic,
 *      so two claimers never both win one) and stamps a fresh claim token;
 *   3. read back what carries our token.
 * A candidate someone else took between 1 and 2 is simply not ours. If the updateMany's
 * write concern is not confirmed, the read-back uses readConcern majority: only committed
 * claims are returned; the others are picked up again later (by the caller's repair path
 * if they commit, as unclaimed if they roll back).
 */
import type { Model, QueryFilter, UpdateQuery } from 'mongoose';
import { isWriteConcernError } from './errors.js';
import { newOp, type Ctx } from './writes.js';

interface Claimable {
  _id: string;
  claimToken?: string;
  lastOp?: string;
}

export async function claimBatch<D extends Claimable>(
  ctx: Ctx,
  model: Model<D>,
  claim: {
    due: QueryFilter<D>;
    /** the date field candidates are taken by, oldest first */
    order: keyof D & string;
    /** > 0 (MongoDB reads 0 as no limit) */
    limit: number;
    /** the claim itself; the claim token (also as `lastOp`) is added to its `$set` */
    update: UpdateQuery<D>;
  },
): Promise<D[]> {
  const { due, order, limit } = claim;
  // batchSize = limit: the whole answer comes in the first reply (no getMore), whatever N
  const candidates = await model
    .find(due, { _id: 1 })
    .sort({ [order]: 1 })
    .limit(limit)
    .batchSize(limit)
    .readConcern('majority')
    .lean<Pick<D, '_id'>[]>()
    .exec();
  if (candidates.length === 0) return [];
  const ids = candidates.map((c) => c._id);
  const claimToken = newOp();
  let unconfirmed = false;
  try {
    await model
      .updateMany({ _id: { $in: ids }, ...due } as QueryFilter<D>, { ...claim.update, $set: { ...claim.update.$set, claimToken, lastOp: claimToken } }, { writeConcern: ctx.wc })
      .exec();
  } catch (err) {
    if (!isWriteConcernError(err)) throw err;
    unconfirmed = true;
  }
  const q = model
    .find({ _id: { $in: ids }, claimToken } as QueryFilter<D>)
    .sort({ [order]: 1, _id: 1 })
    .limit(ids.length)
    .batchSize(ids.length);
  return (unconfirmed ? q.readConcern('majority') : q).lean<D[]>().exec();
}
