/**
 * Group commit on MongoDB (../port-batch.ts): a batch costs a constant number of round trips
 * whatever its size. MongoDB (and FerretDB) give us no multi-document transaction here, so
 * each step is idempotent on its own: incidents are unique per timer and deliveries per key,
 * so a repeated insert is refused and the original kept; the escalation is marked done last,
 * only after its incident and deliveries are in. A write whose write concern was not confirmed
 * makes the whole batch `Unavailable`: its escalations stay pending and the next sweep repeats them.
 */
import type { Contact } from '../../domain/contact.js';
import { newDelivery, type Delivery } from '../../domain/delivery.js';
import { quietDuress, type Incident } from '../../domain/incident.js';
import type { ContactSettings } from '../../domain/locale.js';
import type { AttemptRecord, EscalationItem, EscalationResult } from '../port-batch.js';
import { toContact, toContactSettings, toDelivery, toIncident } from './docs.js';
import { applyEarlyReceipts, attemptUpdate, newDeliveryDoc } from './deliveries.js';
import { isDuplicateKey, isWriteConcernError } from './errors.js';
import type { ContactsDoc, DeliveryDoc, IncidentDoc, TimerDoc } from './schemas.js';
import { joinIncident, timerIncidentDoc } from './incidents.js';
import { bulkUpdate, insertOptions, newOp, unknownOutcome, type Ctx } from './writes.js';

/** Run an unordered write; "already there" (duplicate key) is fine, an unconfirmed write concern is not. */
async function tolerateDuplicates(write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (err) {
    if (isWriteConcernError(err)) throw unknownOutcome(err);
    if (!isDuplicateKey(err)) throw err;
  }
}

/**
 * Five round trips per batch: insert incidents, read them back, insert deliveries, mark done,
 * read which were marked. A timer whose person already has another open incident (its insert is
 * refused by the unique `openUser`) joins that one (one open SOS per person): one more write
 * for the joins, only when there are any.
 */
export async function escalateBatch(ctx: Ctx, items: EscalationItem[]): Promise<EscalationResult[]> {
  if (items.length === 0) return [];
  const now = await ctx.now();
  const mine: IncidentDoc[] = items.map(({ timer, fence, incidentId }) => timerIncidentDoc(timer, fence, incidentId, now));
  await tolerateDuplicates(() => ctx.m.incidents.insertMany(mine, insertOptions(ctx, false)));
  const timerIds = items.map((i) => i.timer.id);
  const users = [...new Set(items.map((i) => i.timer.userId))];
  const found = await ctx.m.incidents
    .find({ $or: [{ timerId: { $in: timerIds } }, { openUser: { $in: users } }] })
    .lean<IncidentDoc[]>()
    .exec();
  const byTimer = new Map(found.map((d) => [d.timerId, d]));
  const openOf = new Map(found.filter((d) => d.openUser !== undefined).map((d) => [d.openUser as string, d]));
  const joined = new Map<string, IncidentDoc>();
  for (const { timer } of items) {
    if (byTimer.has(timer.id)) continue;
    const open = openOf.get(timer.userId);
    // its insert was refused and the open incident closed meanwhile: the next sweep tries again (still pending)
    if (!open) throw new Error(`timer ${timer.id}: its incident was neither inserted nor found`);
    joined.set(timer.id, open);
  }
  for (const [timerId, open] of joined) joined.set(timerId, await joinIncident(ctx, open, timerId));
  const incidentOf = (timerId: string): IncidentDoc => {
    const d = byTimer.get(timerId) ?? joined.get(timerId);
    if (!d) throw new Error(`timer ${timerId}: its incident was neither inserted nor found`);
    return d;
  };

  const deliveries: DeliveryDoc[] = items.flatMap(({ timer, recipients, duressTexts }) => {
    const incidentId = incidentOf(timer.id)._id;
    if (quietDuress(duressTexts, incidentId, joined.has(timer.id))) return [];
    return recipients.map((r) =>
      newDeliveryDoc(
        { id: incidentId, userId: timer.userId },
        newDelivery(incidentId, r, 'sos', r.body, { traceparent: r.traceparent, held: r.held }),
        now,
      ),
    );
  });
  if (deliveries.length > 0) await tolerateDuplicates(() => ctx.m.deliveries.insertMany(deliveries, insertOptions(ctx, false)));

  const op = newOp();
  try {
    await bulkUpdate(
      ctx,
      ctx.m.timers,
      items.map(({ timer }) => ({
        updateOne: {
          filter: { _id: timer.id, escalation: 'pending' as const },
          update: {
            $set: { escalation: 'done' as const, incidentId: incidentOf(timer.id)._id, lastOp: op },
            $currentDate: { updatedAt: true },
          },
        },
      })),
    );
  } catch (err) {
    if (isWriteConcernError(err)) throw unknownOutcome(err);
    throw err;
  }
  const marked = await ctx.m.timers
    .find({ _id: { $in: timerIds }, lastOp: op }, { _id: 1 })
    .lean<Pick<TimerDoc, '_id'>[]>()
    .exec();
  const markedIds = new Set(marked.map((d) => d._id));
  const ours = new Set(mine.map((d) => d._id));
  return items.map(({ timer }) => {
    const d = incidentOf(timer.id);
    return {
      timerId: timer.id,
      incident: toIncident(d),
      created: ours.has(d._id),
      marked: markedIds.has(timer.id),
      ...(joined.has(timer.id) ? { joined: true } : {}),
    };
  });
}

export async function incidentsForTimers(ctx: Ctx, timerIds: string[]): Promise<Incident[]> {
  if (timerIds.length === 0) return [];
  const docs = await ctx.m.incidents
    .find({ timerId: { $in: timerIds } })
    .lean<IncidentDoc[]>()
    .exec();
  return docs.map(toIncident);
}

export async function contactsOf(ctx: Ctx, userIds: string[]): Promise<Map<string, Contact[]>> {
  const out = new Map<string, Contact[]>(userIds.map((u) => [u, []]));
  if (userIds.length === 0) return out;
  const docs = await ctx.m.contacts
    .find({ _id: { $in: [...new Set(userIds)] } })
    .lean<ContactsDoc[]>()
    .exec();
  for (const d of docs) out.set(d._id, d.contacts.map(toContact));
  return out;
}

export async function contactSettingsOf(ctx: Ctx, userIds: string[]): Promise<Map<string, ContactSettings>> {
  const out = new Map<string, ContactSettings>(userIds.map((u) => [u, {}]));
  if (userIds.length === 0) return out;
  const docs = await ctx.m.contacts
    .find({ _id: { $in: [...new Set(userIds)] } }, { language: 1, timeZone: 1 })
    .lean<Pick<ContactsDoc, '_id' | 'language' | 'timeZone'>[]>()
    .exec();
  for (const d of docs) out.set(d._id, toContactSettings(d));
  return out;
}

export async function countDeliveriesSinceMany(ctx: Ctx, userIds: string[], since: Date): Promise<Map<string, number>> {
  const out = new Map<string, number>(userIds.map((u) => [u, 0]));
  if (userIds.length === 0) return out;
  // one aggregate on the (userId, createdAt) index instead of a count per person
  const rows = await ctx.m.deliveries
    .aggregate<{ _id: string; n: number }>([
      {
        $match: {
          userId: { $in: [...new Set(userIds)] },
          createdAt: { $gt: since },
          $or: [{ status: { $ne: 'superseded' } }, { attempts: { $gt: 0 } }],
        },
      },
      { $group: { _id: '$userId', n: { $sum: 1 } } },
    ])
    .exec();
  for (const r of rows) out.set(r._id, r.n);
  return out;
}

export async function nextDeadline(ctx: Ctx): Promise<Date | null> {
  const d = await ctx.m.timers
    .findOne({ status: { $in: ['active', 'extended'] } }, { expiresAt: 1 })
    .sort({ expiresAt: 1 })
    .lean<Pick<TimerDoc, 'expiresAt'>>()
    .exec();
  return d ? d.expiresAt : null;
}

/** One unordered bulkWrite of CAS updates tagged with one token (`bulkUpdate`), then one read of what carries it. */
export async function recordAttempts(ctx: Ctx, list: AttemptRecord[]): Promise<(Delivery | null)[]> {
  if (list.length === 0) return [];
  const now = await ctx.now();
  const op = newOp();
  const ops = list.map(({ key, attempt, outcome }) => {
    const { set, unset } = attemptUpdate(outcome, now);
    return {
      updateOne: {
        filter: { _id: key, status: 'sending' as const, attempts: attempt },
        update: { $set: { ...set, lastOp: op }, $unset: unset },
      },
    };
  });
  try {
    await bulkUpdate(ctx, ctx.m.deliveries, ops);
  } catch (err) {
    // unconfirmed: the caller's leases lapse and the deliveries are claimed again (the carrier key dedupes)
    if (isWriteConcernError(err)) throw unknownOutcome(err);
    throw err;
  }
  const docs = await ctx.m.deliveries
    .find({ _id: { $in: list.map((l) => l.key) }, lastOp: op })
    .lean<DeliveryDoc[]>()
    .exec();
  const early = await applyEarlyReceipts(ctx, docs, now);
  const byKey = new Map(docs.map((d) => [d._id, early.get(d._id) ?? d]));
  return list.map((l) => {
    const d = byKey.get(l.key);
    return d ? toDelivery(d) : null;
  });
}
