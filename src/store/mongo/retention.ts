/**
 * Retention on the MongoDB store, one bounded batch per call, driven by incidents (no joins
 * here): incidents closed before the cut-off and not anonymised yet → their final deliveries
 * (masked number, no text, no contact name) and their notes' text → the incident itself once
 * none of its deliveries is left to do → timers closed before the cut-off whose incident, if
 * any, is closed before it too. Every write repeats its conditions (a CAS per batch).
 */
import { FINAL_DELIVERY, type DeliveryStatus } from '../../domain/delivery.js';
import type { IncidentStatus } from '../../domain/incident.js';
import { maskPhone } from '../../domain/messages.js';
import type { RetentionCounts } from '../../domain/moderation.js';
import type { TimerStatus } from '../../domain/timer.js';
import type { DeliveryDoc, IncidentDoc, TimerDoc } from './schemas.js';
import { bulkUpdate, type Ctx } from './writes.js';

const CLOSED_INCIDENT: IncidentStatus[] = ['resolved', 'false_alarm'];
const CLOSED_TIMER: TimerStatus[] = ['safe', 'cancelled', 'expired'];
const FINAL: DeliveryStatus[] = [...FINAL_DELIVERY];
const UNREDACTED = { redactedAt: { $exists: false } };
const PLACE = { locationName: 1, location: 1, displayName: 1, meeting: 1 } as const;

export async function redactClosed(ctx: Ctx, before: Date, limit: number): Promise<RetentionCounts> {
  const counts: RetentionCounts = { timers: 0, incidents: 0, deliveries: 0, notes: 0, fixes: 0, notifications: 0 };
  if (limit <= 0) return counts;
  const now = await ctx.now();
  const expired = { status: { $in: CLOSED_INCIDENT }, resolvedAt: { $lt: before }, allClear: { $ne: 'pending' as const } };
  const incidents = await ctx.m.incidents
    .find({ ...expired, ...UNREDACTED }, { _id: 1 })
    .sort({ resolvedAt: 1, _id: 1 })
    .limit(limit)
    .lean<Pick<IncidentDoc, '_id'>[]>()
    .exec();
  const ids = incidents.map((i) => i._id);
  if (ids.length > 0) {
    const ds = await ctx.m.deliveries
      .find({ incidentId: { $in: ids }, status: { $in: FINAL }, ...UNREDACTED }, { _id: 1, phone: 1 })
      .limit(limit)
      .lean<Pick<DeliveryDoc, '_id' | 'phone'>[]>()
      .exec();
    if (ds.length > 0) {
      const r = await bulkUpdate(
        ctx,
        ctx.m.deliveries,
        ds.map((d) => ({
          updateOne: {
            filter: { _id: d._id, status: { $in: FINAL }, ...UNREDACTED },
            update: { $set: { phone: maskPhone(d.phone), body: '', contactName: '', redactedAt: now, updatedAt: now } },
          },
        })),
      );
      counts.deliveries = r.modified;
    }
    const notes = await ctx.m.notes
      .updateMany({ incidentId: { $in: ids }, ...UNREDACTED }, { $set: { text: '', redactedAt: now } }, { writeConcern: ctx.wc })
      .exec();
    counts.notes = notes.modifiedCount;
    // an incident waits while a delivery of it is still on its way or not anonymised yet
    const waiting = new Set(
      (
        await ctx.m.deliveries
          .find({ incidentId: { $in: ids }, $or: [{ status: { $nin: FINAL } }, UNREDACTED] }, { incidentId: 1 })
          .lean<Pick<DeliveryDoc, 'incidentId'>[]>()
          .exec()
      ).map((d) => d.incidentId),
    );
    const done = ids.filter((id) => !waiting.has(id));
    if (done.length > 0) {
      const r = await ctx.m.incidents
        .updateMany(
          { _id: { $in: done }, ...expired, ...UNREDACTED },
          // the contacts' acknowledgements name them: they go with the place and the person's name
          { $set: { redactedAt: now }, $unset: { ...PLACE, contactAcks: 1 }, $currentDate: { updatedAt: true } },
          { writeConcern: ctx.wc },
        )
        .exec();
      counts.incidents = r.modifiedCount;
    }
  }
  const timers = await ctx.m.timers
    .find(
      { status: { $in: CLOSED_TIMER }, resolvedAt: { $lt: before }, escalation: { $in: ['none', 'done', 'failed'] }, ...UNREDACTED },
      { _id: 1 },
    )
    .sort({ resolvedAt: 1, _id: 1 })
    .limit(limit)
    .lean<Pick<TimerDoc, '_id'>[]>()
    .exec();
  if (timers.length > 0) {
    const tids = timers.map((t) => t._id);
    // a timer whose incident is open, or closed after the cut-off, keeps its place for now
    const held = await ctx.m.incidents
      .find({ timerId: { $in: tids }, $nor: [expired] }, { timerId: 1 })
      .lean<Pick<IncidentDoc, 'timerId'>[]>()
      .exec();
    const keep = new Set(held.map((i) => i.timerId));
    const free = tids.filter((id) => !keep.has(id));
    if (free.length > 0) {
      const r = await ctx.m.timers
        .updateMany(
          { _id: { $in: free }, status: { $in: CLOSED_TIMER }, resolvedAt: { $lt: before }, ...UNREDACTED },
          { $set: { redactedAt: now }, $unset: PLACE, $currentDate: { updatedAt: true } },
          { writeConcern: ctx.wc },
        )
        .exec();
      counts.timers = r.modifiedCount;
    }
  }
  // the trail of every anonymised timer goes with it
  const redacted = await ctx.m.timers
    .find({ redactedAt: { $exists: true } }, { _id: 1 })
    .sort({ redactedAt: -1 })
    .limit(limit)
    .lean()
    .exec();
  if (redacted.length > 0) {
    const f = await ctx.m.fixes.deleteMany({ timerId: { $in: redacted.map((t) => t._id) } }, { writeConcern: ctx.wc }).exec();
    counts.fixes = f.deletedCount;
  }
  // the inbox: entries recorded before the cut-off
  const old = await ctx.m.notifications
    .find({ createdAt: { $lt: before } }, { _id: 1 })
    .sort({ createdAt: 1 })
    .limit(limit)
    .lean<{ _id: string }[]>()
    .exec();
  if (old.length > 0)
    counts.notifications = (
      await ctx.m.notifications
        .deleteMany({ _id: { $in: old.map((n) => n._id) }, createdAt: { $lt: before } }, { writeConcern: ctx.wc })
        .exec()
    ).deletedCount;
  return counts;
}
