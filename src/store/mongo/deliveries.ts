/** Delivery queries of the MongoDB store: insert-once, lease, attempt, receipt, backlog. */
import type { Delivery, DeliveryStatus } from '../../domain/delivery.js';
import type { Incident } from '../../domain/incident.js';
import type { DeliveryOutcome, NewDelivery } from '../port.js';
import { toDelivery } from './docs.js';
import { isDuplicateKey, isWriteConcernError } from './errors.js';
import type { DeliveryDoc } from './schemas.js';
import { insertOptions, newOp, noneWanted, settle, unknownOutcome, type Ctx } from './writes.js';

const ofIncident = (ctx: Ctx, incidentId: string) => ctx.m.deliveries.find({ incidentId }).sort({ createdAt: 1, _id: 1 });

/**
 * Insert the deliveries that do not exist yet: one unordered insertMany; duplicate-key
 * errors (the key, or incident+contact+kind) are the "already there" answer and the
 * originals stay untouched. If the write concern is not confirmed, every requested key
 * must be visible to a majority read, else the escalation is left pending and repaired.
 */
export async function addDeliveries(ctx: Ctx, incident: Incident, list: NewDelivery[]): Promise<Delivery[]> {
  if (list.length > 0) {
    const now = await ctx.now();
    const docs: DeliveryDoc[] = list.map((d) => ({
      _id: d.key,
      incidentId: incident.id,
      userId: incident.userId,
      contactId: d.contactId,
      contactName: d.contactName,
      phone: d.phone,
      kind: d.kind,
      body: d.body,
      status: 'pending',
      attempts: 0,
      nextAttemptAt: now,
      createdAt: now,
      updatedAt: now,
    }));
    try {
      await ctx.m.deliveries.insertMany(docs, insertOptions(ctx, false));
    } catch (err) {
      if (isWriteConcernError(err)) {
        const seen = await ofIncident(ctx, incident.id).readConcern('majority').lean<DeliveryDoc[]>().exec();
        const keys = new Set(seen.map((d) => d._id));
        if (list.every((d) => keys.has(d.key))) return seen.map(toDelivery);
        throw unknownOutcome(err);
      }
      if (!isDuplicateKey(err)) throw err;
    }
  }
  const all = await ofIncident(ctx, incident.id).lean<DeliveryDoc[]>().exec();
  return all.map(toDelivery);
}

export async function deliveriesFor(ctx: Ctx, incidentIds: string[]): Promise<Delivery[]> {
  if (incidentIds.length === 0) return [];
  const docs = await ctx.m.deliveries
    .find({ incidentId: { $in: incidentIds } })
    .sort({ createdAt: 1, _id: 1 })
    .lean<DeliveryDoc[]>()
    .exec();
  return docs.map(toDelivery);
}

export async function getDelivery(ctx: Ctx, key: string): Promise<Delivery | null> {
  const d = await ctx.m.deliveries.findById(key).lean<DeliveryDoc>().exec();
  return d ? toDelivery(d) : null;
}

/**
 * Lease due deliveries in three round trips per batch, like the timer claim: candidate
 * keys (majority read; each branch of the $or has its own index), one updateMany that
 * re-checks due-ness per document and counts the attempt, read back by claim token.
 */
export async function claimDeliveries(ctx: Ctx, limit: number, leaseMs: number): Promise<Delivery[]> {
  if (noneWanted(limit)) return [];
  const now = await ctx.now();
  const due = {
    $or: [
      { status: 'pending' as const, nextAttemptAt: { $lte: now } },
      { status: 'sending' as const, leaseUntil: { $lte: now } },
    ],
  };
  const candidates = await ctx.m.deliveries
    .find(due, { _id: 1 })
    .sort({ nextAttemptAt: 1 })
    .limit(limit)
    .batchSize(limit)
    .readConcern('majority')
    .lean<Pick<DeliveryDoc, '_id'>[]>()
    .exec();
  if (candidates.length === 0) return [];
  const keys = candidates.map((c) => c._id);
  const claimToken = newOp();
  let unconfirmed = false;
  try {
    await ctx.m.deliveries
      .updateMany(
        { _id: { $in: keys }, ...due },
        { $set: { status: 'sending', leaseUntil: new Date(now.getTime() + leaseMs), updatedAt: now, claimToken, lastOp: claimToken }, $inc: { attempts: 1 } },
        { writeConcern: ctx.wc },
      )
      .exec();
  } catch (err) {
    // unconfirmed: lease only what a majority has seen; the rest lapses and is claimed again
    if (!isWriteConcernError(err)) throw err;
    unconfirmed = true;
  }
  const q = ctx.m.deliveries.find({ _id: { $in: keys }, claimToken }).sort({ nextAttemptAt: 1, _id: 1 }).limit(keys.length).batchSize(keys.length);
  const mine = await (unconfirmed ? q.readConcern('majority') : q).lean<DeliveryDoc[]>().exec();
  return mine.map(toDelivery);
}

/** CAS sending(attempt) → outcome; a lapsed and re-claimed lease has another attempt number. */
export async function recordAttempt(ctx: Ctx, key: string, attempt: number, o: DeliveryOutcome): Promise<Delivery | null> {
  const now = await ctx.now();
  const op = newOp();
  const set: Partial<DeliveryDoc> = { status: o.status, carrier: o.carrier, updatedAt: now, lastOp: op };
  if (o.providerMessageId !== undefined) set.providerMessageId = o.providerMessageId;
  if (o.nextAttemptAt !== undefined) set.nextAttemptAt = o.nextAttemptAt;
  if (o.error !== undefined) set.lastError = o.error;
  const unset: Record<string, 1> = { leaseUntil: 1, claimToken: 1 };
  if (o.error === undefined) unset.lastError = 1;
  const write = ctx.m.deliveries
    .findOneAndUpdate({ _id: key, status: 'sending', attempts: attempt }, { $set: set, $unset: unset }, { returnDocument: 'after', writeConcern: ctx.wc })
    .lean<DeliveryDoc>()
    .exec();
  const d = await settle(write, () => ctx.m.deliveries.findById(key).readConcern('majority').lean<DeliveryDoc>().exec(), op);
  return d ? toDelivery(d) : null;
}

/** Forward-only receipt: CAS from one of `from` (computed by the domain) to `to`. */
export async function applyReceipt(ctx: Ctx, providerMessageId: string, to: 'sent' | 'delivered' | 'failed', from: readonly DeliveryStatus[]): Promise<Delivery | null> {
  if (from.length === 0) return null;
  const now = await ctx.now();
  const op = newOp();
  const write = ctx.m.deliveries
    .findOneAndUpdate(
      { providerMessageId, status: { $in: [...from] } },
      { $set: { status: to, updatedAt: now, lastOp: op } },
      { returnDocument: 'after', writeConcern: ctx.wc },
    )
    .lean<DeliveryDoc>()
    .exec();
  const d = await settle(write, () => ctx.m.deliveries.findOne({ providerMessageId, lastOp: op }).readConcern('majority').lean<DeliveryDoc>().exec(), op);
  return d ? toDelivery(d) : null;
}

export function countDeliveriesSince(ctx: Ctx, userId: string, since: Date): Promise<number> {
  return ctx.m.deliveries.countDocuments({ userId, createdAt: { $gt: since } }).exec();
}

export async function deliveryBacklog(ctx: Ctx): Promise<{ pending: number; oldestDue?: Date; dead: number }> {
  const open = { status: { $in: ['pending', 'sending'] satisfies DeliveryStatus[] } };
  const [pending, oldest, dead] = await Promise.all([
    ctx.m.deliveries.countDocuments(open).exec(),
    ctx.m.deliveries.findOne(open, { nextAttemptAt: 1 }).sort({ nextAttemptAt: 1 }).lean<Pick<DeliveryDoc, 'nextAttemptAt'>>().exec(),
    ctx.m.deliveries.countDocuments({ status: 'dead' }).exec(),
  ]);
  return oldest ? { pending, oldestDue: oldest.nextAttemptAt, dead } : { pending, dead };
}
