/**
 * Token revocation on the MongoDB store: one document per person whose stamp only moves
 * forward (`$max`, one atomic upsert). A moderator's audit line follows it, upserted under an
 * id derived from the stamp (./moderation.ts). An unconfirmed write is an unknown outcome: the
 * caller retries, and a retry moves the stamp again, never back.
 */
import { auditId } from '../../domain/moderation.js';
import { isWriteConcernError } from './errors.js';
import { writeAudit } from './moderation.js';
import type { TokenStampDoc } from './tokens-schema.js';
import { unknownOutcome, type Ctx } from './writes.js';

export async function revokeTokens(ctx: Ctx, userId: string, moderator?: string): Promise<Date> {
  const now = await ctx.now();
  let doc: TokenStampDoc | null;
  try {
    doc = await ctx.m.tokenStamps
      .findOneAndUpdate({ _id: userId }, { $max: { notBefore: now } }, { upsert: true, returnDocument: 'after', writeConcern: ctx.wc })
      .lean<TokenStampDoc>()
      .exec();
  } catch (err) {
    if (isWriteConcernError(err)) throw unknownOutcome(err);
    throw err;
  }
  if (!doc) throw new Error(`token stamp of ${userId}: the upsert returned nothing`);
  if (moderator !== undefined)
    await writeAudit(ctx, [
      { id: auditId.revoke(userId, doc.notBefore), actor: moderator, action: 'user.revoke_tokens', target: userId, person: userId },
    ]);
  return doc.notBefore;
}

export async function tokensNotBefore(ctx: Ctx, userIds: readonly string[]): Promise<Map<string, Date>> {
  const out = new Map<string, Date>();
  if (userIds.length === 0) return out;
  const docs = await ctx.m.tokenStamps
    .find({ _id: { $in: [...userIds] } })
    .lean<TokenStampDoc[]>()
    .exec();
  for (const d of docs) out.set(d._id, d.notBefore);
  return out;
}
