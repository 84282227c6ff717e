/** Delivery queries of the MongoDB store: insert-once, lease, attempt, receipts (early ones kept), backlog. */
import { deliveryKey, EARLY_RECEIPT_KEEP_MS, receiptFrom, type Delivery, type DeliveryStatus } from '../../domain/delivery.js';
import type { Incident } from '../../domain/incident.js';
import type { DeliveryOutcome, NewDelivery, ReceiptOutcome, ReceiptStatus } from '../port.js';
import { claimBatch } from './claim.js';
import { toDelivery } from './docs.js';
import { isDuplicateKey, isWriteConcernError } from './errors.js';
import type { DeliveryDoc, EarlyReceiptDoc } from './schemas.js';
import { casOne, insertOptions, newOp, noneWanted, rereadMajority, unknownOutcome, writeThenRead, type Ctx } from './writes.js';

const ofIncident = (ctx: Ctx, incidentId: string) => ctx.m.deliveries.find({ incidentId }).sort({ createdAt: 1, _id: 1 });

/** The document of a new delivery: one text of `incident` (its id and person) to one contact, due now. */
export function newDeliveryDoc(incident: Pick<Incident, 'id' | 'userId'>, d: NewDelivery, now: Date): DeliveryDoc {
  return {
    _id: d.key,
    incidentId: incident.id,
    userId: incident.userId,
    contactId: d.contactId,
    contactName: d.contactName,
    phone: d.phone,
    kind: d.kind,
    body: d.body,
    status: d.held ? 'superseded' : 'pending',
    attempts: 0,
    nextAttemptAt: now,
    createdAt: now,
    updatedAt: now,
    ...(d.traceparent === undefined ? {} : { traceparent: d.traceparent }),
    // a cap held it back: never sent, and the incident says why
    ...(d.held === undefined ? {} : { lastError: d.held }),
  };
}

/**
 * Insert the deliveries that do not exist yet: one unordered insertMany; duplicate-key
 * errors (the key, or incident+contact+kind) are the "already there" answer and the
 * originals stay untouched. If the write concern is not confirmed, every requested key
 * must be visible to a majority read, else the escalation is left pending and repaired.
 */
export async function addDeliveries(ctx: Ctx, incident: Incident, list: NewDelivery[]): Promise<Delivery[]> {
  if (list.length > 0) {
    const now = await ctx.now();
    const docs = list.map((d) => newDeliveryDoc(incident, d, now));
    try {
      await ctx.m.deliveries.insertMany(docs, insertOptions(ctx, false));
    } catch (err) {
      if (isWriteConcernError(err)) {
        const seen = await rereadMajority(err, () => ofIncident(ctx, incident.id).readConcern('majority').lean<DeliveryDoc[]>().exec());
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

type Candidate = Pick<DeliveryDoc, '_id' | 'kind' | 'incidentId' | 'contactId' | 'status'>;

/**
 * Before a claim: a candidate whose lease lapsed is marked `maybeAccepted` (the lost attempt
 * may have gone out), and an all-clear whose contact's SOS is still pending or sending is
 * left for later (monotone: an SOS never goes back to pending or sending once final).
 */
async function admitDeliveries<C extends Candidate>(ctx: Ctx, now: Date, candidates: C[]): Promise<C[]> {
  const lapsed = candidates.filter((c) => c.status === 'sending').map((c) => c._id);
  if (lapsed.length > 0) {
    await ctx.m.deliveries
      .updateMany(
        { _id: { $in: lapsed }, status: 'sending', leaseUntil: { $lte: now } },
        { $set: { maybeAccepted: true } },
        { writeConcern: ctx.wc },
      )
      .exec();
  }
  // a follow-up waits for its contact's SOS; an all-clear also for their moved follow-up
  const clears = candidates.filter((c) => c.kind !== 'sos');
  if (clears.length === 0) return candidates;
  const before = (c: Candidate): string[] => [
    deliveryKey(c.incidentId, c.contactId, 'sos'),
    ...(c.kind === 'all_clear' ? [deliveryKey(c.incidentId, c.contactId, 'moved')] : []),
  ];
  const open = await ctx.m.deliveries
    .find({ _id: { $in: clears.flatMap(before) }, status: { $in: ['pending', 'sending'] satisfies DeliveryStatus[] } }, { _id: 1 })
    .lean<Pick<DeliveryDoc, '_id'>[]>()
    .exec();
  const waiting = new Set(open.map((d) => d._id));
  return candidates.filter((c) => c.kind === 'sos' || !before(c).some((k) => waiting.has(k)));
}

/** Batched claim (./claim.ts), counting the attempt; an uncommitted lease lapses and is claimed again. */
export async function claimDeliveries(ctx: Ctx, limit: number, leaseMs: number): Promise<Delivery[]> {
  if (noneWanted(limit)) return [];
  const now = await ctx.now();
  const mine = await claimBatch(ctx, ctx.m.deliveries, {
    // each branch of the $or has its own index
    due: {
      $or: [
        { status: 'pending' as const, nextAttemptAt: { $lte: now } },
        { status: 'sending' as const, leaseUntil: { $lte: now } },
      ],
    },
    order: 'nextAttemptAt',
    limit,
    update: { $set: { status: 'sending', leaseUntil: new Date(now.getTime() + leaseMs), updatedAt: now }, $inc: { attempts: 1 } },
    admit: { fields: ['kind', 'incidentId', 'contactId', 'status'], keep: (c) => admitDeliveries(ctx, now, c) },
  });
  return mine.map(toDelivery);
}

/**
 * The early receipts of messages just recorded as sent (./batch.ts too): each applied to its
 * delivery (forward only, so applying one twice changes nothing) and removed. What they moved,
 * by delivery key. Right after the outcome's write, not in it (no transactions here): a receipt
 * kept meanwhile is applied by applyReceipt's second look instead.
 */
export async function applyEarlyReceipts(ctx: Ctx, recorded: readonly DeliveryDoc[], now: Date): Promise<Map<string, DeliveryDoc>> {
  const moved = new Map<string, DeliveryDoc>();
  const sids = recorded.flatMap((d) => (d.status === 'sent' && d.providerMessageId !== undefined ? [d.providerMessageId] : []));
  if (sids.length === 0) return moved;
  const early = await ctx.m.earlyReceipts
    .find({ _id: { $in: sids }, receivedAt: { $gt: new Date(now.getTime() - EARLY_RECEIPT_KEEP_MS) } })
    .lean<EarlyReceiptDoc[]>()
    .exec();
  for (const r of early) {
    const d = await moveByReceipt(ctx, r._id, r.status, receiptFrom(r.status), now);
    if (d) moved.set(d._id, d);
    await dropEarly(ctx, r);
  }
  return moved;
}

/** What recording outcome `o` of an attempt writes: the outcome, the lease and claim gone, an error only while there is one. */
export function attemptUpdate(o: DeliveryOutcome, now: Date): { set: Partial<DeliveryDoc>; unset: Record<string, 1> } {
  const set: Partial<DeliveryDoc> = { status: o.status, carrier: o.carrier, updatedAt: now };
  if (o.providerMessageId !== undefined) set.providerMessageId = o.providerMessageId;
  if (o.nextAttemptAt !== undefined) set.nextAttemptAt = o.nextAttemptAt;
  if (o.error !== undefined) set.lastError = o.error;
  if (o.maybeAccepted === true) set.maybeAccepted = true;
  const unset: Record<string, 1> = { leaseUntil: 1, claimToken: 1 };
  if (o.error === undefined) unset.lastError = 1;
  return { set, unset };
}

/** CAS sending(attempt) → outcome; a lapsed and re-claimed lease has another attempt number. */
export async function recordAttempt(ctx: Ctx, key: string, attempt: number, o: DeliveryOutcome): Promise<Delivery | null> {
  const now = await ctx.now();
  const { set, unset } = attemptUpdate(o, now);
  const d = await casOne(ctx, ctx.m.deliveries, {
    filter: { _id: key, status: 'sending', attempts: attempt },
    update: (op) => ({ $set: { ...set, lastOp: op }, $unset: unset }),
  });
  if (!d) return null;
  return toDelivery((await applyEarlyReceipts(ctx, [d], now)).get(d._id) ?? d);
}

/** pending SOS and moved follow-ups → superseded, in one updateMany tagged with a token; what carries the token is what moved. */
export async function supersedePendingSos(ctx: Ctx, incidentId: string): Promise<Delivery[]> {
  const now = await ctx.now();
  const op = newOp();
  const q = ctx.m.deliveries.find({ incidentId, lastOp: op }).sort({ createdAt: 1, _id: 1 });
  const moved = await writeThenRead(
    () =>
      ctx.m.deliveries
        .updateMany(
          { incidentId, kind: { $in: ['sos', 'moved'] }, status: 'pending' },
          { $set: { status: 'superseded', updatedAt: now, lastOp: op } },
          { writeConcern: ctx.wc },
        )
        .exec(),
    (majority) => (majority ? q.readConcern('majority') : q).lean<DeliveryDoc[]>().exec(),
  );
  return moved.map(toDelivery);
}

/** CAS sending(attempt) → `set`, the claim's attempt given back (no carrier call was made); lease and claim token cleared. */
async function giveBackClaim(ctx: Ctx, key: string, attempt: number, set: Partial<DeliveryDoc>): Promise<Delivery | null> {
  const now = await ctx.now();
  const d = await casOne(ctx, ctx.m.deliveries, {
    filter: { _id: key, status: 'sending', attempts: attempt },
    update: (op) => ({ $set: { ...set, updatedAt: now, lastOp: op }, $inc: { attempts: -1 }, $unset: { leaseUntil: 1, claimToken: 1 } }),
  });
  return d ? toDelivery(d) : null;
}

/** Nothing was sent: the claim goes back to pending, due at `dueAt` (lastError kept). */
export const releaseClaim = (ctx: Ctx, key: string, attempt: number, dueAt: Date): Promise<Delivery | null> =>
  giveBackClaim(ctx, key, attempt, { status: 'pending', nextAttemptAt: dueAt });

/** CAS sending(attempt) → superseded without a carrier call. */
export const supersedeClaimed = (ctx: Ctx, key: string, attempt: number, reason: string): Promise<Delivery | null> =>
  giveBackClaim(ctx, key, attempt, { status: 'superseded', lastError: reason });

/** Forward-only receipt: CAS of the delivery whose current message is `pid`, from one of `from` (computed by the domain) to `to`. */
function moveByReceipt(ctx: Ctx, pid: string, to: ReceiptStatus, from: readonly DeliveryStatus[], now: Date): Promise<DeliveryDoc | null> {
  if (from.length === 0) return Promise.resolve(null);
  return casOne(ctx, ctx.m.deliveries, {
    filter: { providerMessageId: pid, status: { $in: [...from] } },
    update: (op) => ({ $set: { status: to, updatedAt: now, lastOp: op } }),
    // no id to find it by: our write is the one carrying our token
    reread: (op) => ({ providerMessageId: pid, lastOp: op }),
  });
}

const isReceiptStatus = (s: DeliveryStatus): s is ReceiptStatus => s === 'sent' || s === 'delivered' || s === 'failed';

/** A receipt for a message no attempt has recorded: upserted; over one already kept only if it goes further (`from`). */
async function keepEarly(ctx: Ctx, pid: string, to: ReceiptStatus, from: readonly DeliveryStatus[], now: Date): Promise<void> {
  try {
    await ctx.m.earlyReceipts
      .updateOne(
        { _id: pid, status: { $in: from.filter(isReceiptStatus) } },
        { $set: { status: to, receivedAt: now } },
        { upsert: true, writeConcern: ctx.wc },
      )
      .exec();
  } catch (err) {
    if (isWriteConcernError(err)) throw unknownOutcome(err); // Twilio is answered 5xx and posts it again
    if (!isDuplicateKey(err)) throw err; // kept already, as far or further
  }
  // FerretDB v1 has no TTL index: what waited longer than any attempt could is removed here
  await ctx.m.earlyReceipts
    .deleteMany({ receivedAt: { $lte: new Date(now.getTime() - EARLY_RECEIPT_KEEP_MS) } }, { writeConcern: ctx.wc })
    .exec();
}

/** Remove an early receipt once applied (only as it was read: a further one kept meanwhile stays for its own look). */
async function dropEarly(ctx: Ctx, r: EarlyReceiptDoc): Promise<void> {
  await ctx.m.earlyReceipts
    .deleteOne({ _id: r._id, status: r.status }, { writeConcern: ctx.wc })
    .exec()
    // a leftover is harmless: applying it again changes nothing, and it expires
    .catch(() => undefined);
}

/**
 * A receipt moves the delivery whose current message it is about, else it is kept for the attempt
 * that records that message. Kept, then looked for again: an attempt recorded between the first
 * look and the keep may have looked for early receipts before this one was there.
 */
export async function applyReceipt(ctx: Ctx, pid: string, to: ReceiptStatus, from: readonly DeliveryStatus[]): Promise<ReceiptOutcome> {
  const now = await ctx.now();
  const moved = await moveByReceipt(ctx, pid, to, from, now);
  if (moved) return { result: 'applied', delivery: toDelivery(moved) };
  if (await ctx.m.deliveries.exists({ providerMessageId: pid }).exec()) {
    // its outcome may have been recorded just after our first look: look again now that it is there
    const again = await moveByReceipt(ctx, pid, to, from, now);
    return again ? { result: 'applied', delivery: toDelivery(again) } : { result: 'stale' };
  }
  await keepEarly(ctx, pid, to, from, now);
  const late = await moveByReceipt(ctx, pid, to, from, now);
  if (!late) return { result: 'kept' };
  await dropEarly(ctx, { _id: pid, status: to, receivedAt: now });
  return { result: 'applied', delivery: toDelivery(late) };
}

export function countDeliveriesSince(ctx: Ctx, userId: string, since: Date): Promise<number> {
  // texts that went or will go to a carrier: one superseded before any attempt (never sent) does not count
  return ctx.m.deliveries
    .countDocuments({ userId, createdAt: { $gt: since }, $or: [{ status: { $ne: 'superseded' } }, { attempts: { $gt: 0 } }] })
    .exec();
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
