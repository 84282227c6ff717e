/** The location trail on MongoDB (the LocationStore part of the port). */
import type { StoredFix } from '../../domain/location.js';
import type { FixDoc } from './location-schema.js';
import { bulkUpdate, type Ctx } from './writes.js';

export const toFix = (d: FixDoc): StoredFix => ({
  timerId: d.timerId,
  userId: d.userId,
  at: d.at,
  lat: d.lat,
  lng: d.lng,
  ...(typeof d.accuracyM === 'number' ? { accuracyM: d.accuracyM } : {}),
});

/** Upserts keyed by (timer, fix time): idempotent, and a retry after an unconfirmed write is harmless. */
export async function addFixes(ctx: Ctx, fixes: StoredFix[]): Promise<number> {
  if (fixes.length === 0) return 0;
  const now = await ctx.now();
  const r = await bulkUpdate(
    ctx,
    ctx.m.fixes,
    fixes.map((f) => ({
      updateOne: {
        filter: { _id: `${f.timerId}:${f.at.getTime()}` },
        update: {
          $setOnInsert: {
            timerId: f.timerId,
            userId: f.userId,
            at: f.at,
            lat: f.lat,
            lng: f.lng,
            storedAt: now,
            ...(f.accuracyM === undefined ? {} : { accuracyM: f.accuracyM }),
          },
        },
        upsert: true,
      },
    })),
  );
  return r.upserted;
}

export async function listFixes(ctx: Ctx, timerId: string, limit: number): Promise<StoredFix[]> {
  const docs = await ctx.m.fixes.find({ timerId }).sort({ at: -1 }).limit(limit).lean<FixDoc[]>().exec();
  return docs.reverse().map(toFix);
}

export async function lastFix(ctx: Ctx, timerId: string): Promise<StoredFix | null> {
  const d = await ctx.m.fixes.findOne({ timerId }).sort({ at: -1 }).lean<FixDoc>().exec();
  return d ? toFix(d) : null;
}
