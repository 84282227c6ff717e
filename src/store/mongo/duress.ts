/** The duress PIN on the MongoDB store: one document per person, replaced whole by an upsert. */
import type { DuressSecret } from '../port-duress.js';
import type { DuressPinDoc } from './duress-schema.js';
import { isWriteConcernError } from './errors.js';
import { unknownOutcome, type Ctx } from './writes.js';

export async function setDuressPin(ctx: Ctx, userId: string, s: DuressSecret): Promise<void> {
  const now = await ctx.now();
  try {
    await ctx.m.duressPins
      .replaceOne({ _id: userId }, { salt: s.salt, hash: s.hash, cost: s.cost, updatedAt: now }, { upsert: true, writeConcern: ctx.wc })
      .exec();
  } catch (err) {
    // setting the same PIN again is harmless: the caller retries
    if (isWriteConcernError(err)) throw unknownOutcome(err);
    throw err;
  }
}

export async function getDuressPin(ctx: Ctx, userId: string): Promise<DuressSecret | null> {
  const doc = await ctx.m.duressPins.findById(userId).readConcern('majority').lean<DuressPinDoc>().exec();
  return doc ? { salt: doc.salt, hash: doc.hash, cost: doc.cost } : null;
}

export async function deleteDuressPin(ctx: Ctx, userId: string): Promise<boolean> {
  try {
    const r = await ctx.m.duressPins.deleteOne({ _id: userId }, { writeConcern: ctx.wc }).exec();
    return r.deletedCount > 0;
  } catch (err) {
    if (isWriteConcernError(err)) throw unknownOutcome(err);
    throw err;
  }
}
