/**
 * Batched claim in three round trips whatever the batch size: (1) candidate ids, majority
 * read; (2) one updateMany re-checking `due` per document (atomic each, so two claimers
 * never both win one) and stamping a claim token; (3) read back what carries the token.
 * If (2) is unconfirmed, (3) reads with majority: only committed claims are returned.
 */
import type { Model, QueryFilter, UpdateQuery } from 'mongoose';
import { newOp, writeThenRead, type Ctx } from './writes.js';

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
    /**
     * Drops candidates that must wait (a rule across documents, which `due` cannot say), and
     * may note something on them before they are claimed. What it admits must stay admissible.
     * It sees the candidates with `fields`; twice `limit` are read so that waiting ones do not
     * fill the batch. Costs round trips only when it makes them.
     */
    admit?: { fields: (keyof D & string)[]; keep: (candidates: D[]) => Promise<D[]> };
  },
): Promise<D[]> {
  const { due, order, limit, admit } = claim;
  const read = admit ? limit * 2 : limit;
  const projection: Record<string, 1> = { _id: 1 };
  for (const f of admit?.fields ?? []) projection[f] = 1;
  // batchSize = limit: the whole answer comes in the first reply (no getMore), whatever N
  const candidates = await model
    .find(due, projection)
    .sort({ [order]: 1 })
    .limit(read)
    .batchSize(read)
    .readConcern('majority')
    .lean<D[]>()
    .exec();
  if (candidates.length === 0) return [];
  const ids = (admit ? (await admit.keep(candidates)).slice(0, limit) : candidates).map((c) => c._id);
  if (ids.length === 0) return [];
  const claimToken = newOp();
  const q = model
    .find({ _id: { $in: ids }, claimToken } as QueryFilter<D>)
    .sort({ [order]: 1, _id: 1 })
    .limit(ids.length)
    .batchSize(ids.length);
  return writeThenRead(
    () =>
      model
        .updateMany(
          { _id: { $in: ids }, ...due } as QueryFilter<D>,
          { ...claim.update, $set: { ...claim.update.$set, claimToken, lastOp: claimToken } },
          { writeConcern: ctx.wc },
        )
        .exec(),
    (majority) => (majority ? q.readConcern('majority') : q).lean<D[]>().exec(),
  );
}
