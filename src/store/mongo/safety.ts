/**
 * The safety features on MongoDB: the panic SOS, the warning claim, the inbox. No multi-document
 * transaction: the panic is a loop of single-document CAS writes whose losers re-read and decide
 * again. Two unique indexes make concurrent writers agree: one incident per timer (`timerId`),
 * one open incident per person (`openUser`, sparse, unset when the incident closes).
 */
import { Conflict } from '../../domain/errors.js';
import { MAX_PANIC_NOTES, OPEN_INCIDENT, panicSlot, type Incident } from '../../domain/incident.js';
import { warningNotification, type NewNotification, type Notification } from '../../domain/notification.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import { LIVE, type Timer } from '../../domain/timer.js';
import type { WarningWindow } from '../../domain/warning.js';
import { randomUUID } from 'node:crypto';
import type { NewPanic, NotificationQuery, PanicKey, PanicResult, Warned } from '../port-safety.js';
import { claimBatch } from './claim.js';
import { toIncident, toTimer } from './docs.js';
import { isDuplicateKey } from './errors.js';
import { joinIncident, pendingIncidents } from './incidents.js';
import type { IncidentDoc, NotificationDoc, TimerDoc } from './schemas.js';
import { casOne, defined, insertOptions, noneWanted, type Ctx } from './writes.js';

const live = { $in: [...LIVE] };
const open = { $in: [...OPEN_INCIDENT] };

export async function raisePanic(ctx: Ctx, p: NewPanic, idem?: PanicKey): Promise<PanicResult> {
  if (idem) {
    const prior = await ctx.m.incidents.findOne({ userId: p.userId, 'sosKeys.key': idem.key }).lean<IncidentDoc>().exec();
    if (prior) {
      const k = prior.sosKeys?.find((x) => x.key === idem.key);
      if (k?.fingerprint !== idem.fingerprint) return { kind: 'idempotency_mismatch' };
      return { kind: 'replayed', incident: toIncident(prior) };
    }
  }
  const result = await panicOnce(ctx, p);
  if (!idem) return result;
  // recorded after the fact: a retry racing this request finds the same open incident and attaches
  await ctx.m.incidents
    .updateOne({ _id: result.incident.id, 'sosKeys.key': { $ne: idem.key } }, { $push: { sosKeys: idem } }, { writeConcern: ctx.wc })
    .exec();
  return result;
}

async function panicOnce(ctx: Ctx, p: NewPanic): Promise<Exclude<PanicResult, { kind: 'replayed' | 'idempotency_mismatch' }>> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const now = await ctx.now();
    const [current, liveTimer] = await Promise.all([
      ctx.m.incidents
        .findOne({ userId: p.userId, status: open })
        .sort({ createdAt: -1, _id: -1 })
        .readConcern('majority')
        .lean<IncidentDoc>()
        .exec(),
      // a duress SOS never touches a live timer: the phone would see it expire (it may be a timer armed after the check-in)
      p.source === 'duress' ? null : ctx.m.timers.findOne({ liveUser: p.userId }).readConcern('majority').lean<TimerDoc>().exec(),
    ]);
    if (current) {
      const src = p.source ?? 'panic';
      const has = (current.sources ?? ['timer']).includes(src);
      const added = has
        ? null
        : await casOne(ctx, ctx.m.incidents, {
            filter: { _id: current._id, status: open, sources: current.sources ? { $ne: src } : { $exists: false } },
            update: (op) => ({
              ...(current.sources ? { $push: { sources: src } } : {}),
              $set: { lastOp: op, ...(current.sources ? {} : { sources: ['timer', src] }) },
              $currentDate: { updatedAt: true },
            }),
          });
      if (!has && !added) continue; // changed meanwhile (closed, or another panic added the source): decide again
      const linked = liveTimer
        ? await casOne(ctx, ctx.m.timers, {
            filter: { _id: liveTimer._id, status: live },
            update: (op) => ({
              $set: { status: 'expired', escalation: 'done', incidentId: current._id, resolvedAt: now, lastOp: op },
              $currentDate: { updatedAt: true },
              $unset: { liveUser: 1 },
            }),
          })
        : null;
      // the timer joins the open incident: it can check in and post fixes there, the trail covers it
      let doc = added ?? current;
      if (linked) doc = await joinIncident(ctx, doc, linked._id);
      if (p.note !== undefined) doc = (await addNote(ctx, doc._id, p.note, now)) ?? doc;
      const r = { kind: 'attached' as const, incident: toIncident(doc), sourceAdded: added !== null };
      return linked ? { ...r, timer: toTimer(linked) } : r;
    }
    let taken: TimerDoc | null;
    if (liveTimer) {
      taken = await casOne(ctx, ctx.m.timers, {
        filter: { _id: liveTimer._id, status: live },
        update: (op) => ({
          $set: { status: 'expired', escalation: 'pending', resolvedAt: now, expiredByFence: 0, lastOp: op },
          $currentDate: { updatedAt: true },
          $unset: { liveUser: 1 },
        }),
      });
      if (!taken) continue; // swept or resolved meanwhile
    } else {
      taken = await ctx.m.timers
        .findOne({ userId: p.userId, escalation: 'pending', incidentId: { $exists: false } })
        .sort({ expiresAt: -1 })
        .readConcern('majority')
        .lean<TimerDoc>()
        .exec();
    }
    const doc = incidentDoc(p, now, taken);
    try {
      await ctx.m.incidents.insertMany([doc], insertOptions(ctx, true));
    } catch (err) {
      if (isDuplicateKey(err)) continue; // the sweep opened the timer's incident, or another panic opened one
      throw err;
    }
    const incident = toIncident(doc);
    return taken ? { kind: 'created', incident, timer: toTimer(taken) } : { kind: 'created', incident };
  }
  throw Conflict('sos_contended', 'the SOS kept racing other changes; retry');
}

/** Append a panic note, at most MAX_PANIC_NOTES on one incident; null when full. */
async function addNote(ctx: Ctx, incidentId: string, text: string, at: Date): Promise<IncidentDoc | null> {
  return casOne(ctx, ctx.m.incidents, {
    filter: { _id: incidentId, [`panicNotes.${MAX_PANIC_NOTES - 1}`]: { $exists: false } },
    update: (op) => ({ $push: { panicNotes: { text, at } }, $set: { lastOp: op }, $currentDate: { updatedAt: true } }),
  });
}

function incidentDoc(p: NewPanic, now: Date, timer: TimerDoc | null): IncidentDoc {
  const own = p.location !== undefined || p.locationName !== undefined;
  return {
    _id: p.incidentId,
    timerId: timer ? timer._id : panicSlot(p.incidentId),
    userId: p.userId,
    status: 'active',
    deadline: now,
    createdAt: now,
    updatedAt: now,
    fence: 0,
    sources: [p.source ?? 'panic'],
    openUser: p.userId,
    ...(p.note === undefined ? {} : { panicNotes: [{ text: p.note, at: now }] }),
    // a timer's own escalation (pending) is the outbox when there is one
    ...(timer ? {} : { panicTexts: 'pending' as const }),
    ...defined({
      locationName: own ? p.locationName : timer?.locationName,
      location: own ? p.location : timer?.location,
      displayName: p.displayName ?? timer?.displayName,
    }),
  };
}

export const pendingPanicTexts = (ctx: Ctx, limit: number): Promise<Incident[]> => pendingIncidents(ctx, 'panicTexts', 'createdAt', limit);

export async function markPanicTexted(ctx: Ctx, incidentId: string): Promise<boolean> {
  const d = await casOne(ctx, ctx.m.incidents, {
    filter: { _id: incidentId, panicTexts: 'pending' },
    update: (op) => ({ $set: { panicTexts: 'done', lastOp: op }, $currentDate: { updatedAt: true } }),
  });
  return d !== null;
}

export async function pendingDuress(ctx: Ctx, limit: number): Promise<Timer[]> {
  if (noneWanted(limit)) return [];
  const docs = await ctx.m.timers
    .find({ duressPending: true })
    .sort({ resolvedAt: 1, _id: 1 })
    .limit(limit)
    .batchSize(limit)
    .readConcern('majority')
    .lean<TimerDoc[]>()
    .exec();
  return docs.map(toTimer);
}

/** Unset, updatedAt untouched: the person's change feed must not show a write they cannot see. */
export async function markDuressRaised(ctx: Ctx, timerId: string): Promise<boolean> {
  const d = await casOne(ctx, ctx.m.timers, {
    filter: { _id: timerId, duressPending: true },
    update: (op) => ({ $set: { lastOp: op }, $unset: { duressPending: 1 } }),
  });
  return d !== null;
}

/**
 * Batched claim (./claim.ts) of live timers in the warning window; the inbox entry follows in
 * its own write (keyed by the warning, so a repeat leaves one).
 */
export async function claimWarnings(ctx: Ctx, limit: number, w: WarningWindow): Promise<Warned[]> {
  if (noneWanted(limit) || w.beforeMs <= 0) return [];
  const now = (await ctx.now()).getTime();
  const docs = await claimBatch(ctx, ctx.m.timers, {
    due: {
      status: live,
      warnedAt: { $exists: false },
      expiresAt: { $lte: new Date(now + w.beforeMs), $gt: new Date(now - w.graceMs) },
    },
    order: 'expiresAt',
    limit,
    update: { $set: { warnedAt: new Date(now) }, $currentDate: { updatedAt: true } },
    // a timer shorter than the lead is never warned (domain/warning.ts); an extension only makes it longer
    admit: {
      fields: ['startedAt', 'expiresAt'],
      keep: async (c) => c.filter((d) => d.expiresAt.getTime() - d.startedAt.getTime() > w.beforeMs),
    },
  });
  const out: Warned[] = [];
  for (const d of docs) {
    const timer = toTimer(d);
    const n = await addNotification(ctx, warningNotification(timer, `ntf_${randomUUID()}`));
    out.push(n.created ? { timer, notification: n.notification } : { timer });
  }
  return out;
}

export const toNotification = (d: NotificationDoc): Notification => {
  const n: Notification = { id: d._id, userId: d.userId, key: d.key, kind: d.kind, title: d.title, body: d.body, createdAt: d.createdAt };
  if (d.timerId !== undefined) n.timerId = d.timerId;
  if (d.incidentId !== undefined) n.incidentId = d.incidentId;
  if (d.readAt !== undefined) n.readAt = d.readAt;
  return n;
};

export async function addNotification(ctx: Ctx, n: NewNotification): Promise<{ notification: Notification; created: boolean }> {
  const doc: NotificationDoc = { _id: n.id, ...n, createdAt: await ctx.now() };
  delete (doc as Partial<NewNotification>).id;
  try {
    await ctx.m.notifications.insertMany([doc], insertOptions(ctx, true));
    return { notification: toNotification(doc), created: true };
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
  const existing = await ctx.m.notifications.findOne({ userId: n.userId, key: n.key }).lean<NotificationDoc>().exec();
  if (!existing) throw new Error(`notification ${n.key}: refused as a duplicate but not found`);
  return { notification: toNotification(existing), created: false };
}

/** One at a time, in order: a key repeated in the list finds the first one's entry. */
export async function addNotifications(ctx: Ctx, list: NewNotification[]): Promise<{ notification: Notification; created: boolean }[]> {
  const out: { notification: Notification; created: boolean }[] = [];
  for (const n of list) out.push(await addNotification(ctx, n));
  return out;
}

export async function listNotifications(ctx: Ctx, userId: string, q: NotificationQuery = {}): Promise<Notification[]> {
  if (noneWanted(q.limit)) return [];
  const limit = q.limit ?? PAGE_SIZE;
  const b = q.before;
  const docs = await ctx.m.notifications
    .find({
      userId,
      ...(q.unread ? { readAt: { $exists: false } } : {}),
      ...(b ? { $or: [{ createdAt: { $lt: b.createdAt } }, { createdAt: b.createdAt, _id: { $lt: b.id } }] } : {}),
    })
    .sort({ createdAt: -1, _id: -1 })
    .limit(limit)
    .batchSize(limit)
    .lean<NotificationDoc[]>()
    .exec();
  return docs.map(toNotification);
}

export async function markNotificationRead(ctx: Ctx, userId: string, id: string): Promise<Notification | null> {
  const now = await ctx.now();
  const d = await ctx.m.notifications
    .findOneAndUpdate(
      { _id: id, userId, readAt: { $exists: false } },
      { $set: { readAt: now } },
      { returnDocument: 'after', writeConcern: ctx.wc },
    )
    .lean<NotificationDoc>()
    .exec();
  if (d) return toNotification(d);
  // already read (idempotent), or not this person's
  const seen = await ctx.m.notifications.findOne({ _id: id, userId }).lean<NotificationDoc>().exec();
  return seen ? toNotification(seen) : null;
}

export async function markAllNotificationsRead(ctx: Ctx, userId: string): Promise<number> {
  const now = await ctx.now();
  const r = await ctx.m.notifications
    .updateMany({ userId, readAt: { $exists: false } }, { $set: { readAt: now } }, { writeConcern: ctx.wc })
    .exec();
  return r.modifiedCount;
}
