/**
 * A person's own data on the MongoDB store: the export and the erasure. No multi-document
 * transaction here: the erasure checks first (no open incident, no live timer), then removes
 * or re-names each kind in its own write, the fixes before the timers they are found through.
 * A crash half-way leaves the rest for a repeat of the request, which finds it and finishes
 * (each step selects by the user id, which the step removes or replaces).
 */
import type { AuditDoc } from './moderation-schemas.js';
import type { ErasedCounts, ErasureResult, PersonalData } from '../port-personal.js';
import { toContactSettings, toIncident, toTimer } from './docs.js';
import { isDuplicateKey } from './errors.js';
import { toFix } from './location.js';
import { toNotification } from './safety.js';
import type { ContactsDoc, IncidentDoc, NotificationDoc, TimerDoc } from './schemas.js';
import type { FixDoc } from './location-schema.js';
import { insertOptions, type Ctx } from './writes.js';

export async function personalData(ctx: Ctx, userId: string): Promise<PersonalData> {
  const [timers, contacts, notifications, incidents, duressPins] = await Promise.all([
    ctx.m.timers.find({ userId }).sort({ startedAt: 1, _id: 1 }).lean<TimerDoc[]>().exec(),
    ctx.m.contacts.findById(userId).lean<ContactsDoc>().exec(),
    ctx.m.notifications.find({ userId }).sort({ createdAt: 1, _id: 1 }).lean<NotificationDoc[]>().exec(),
    ctx.m.incidents.find({ userId }).sort({ createdAt: 1, _id: 1 }).lean<IncidentDoc[]>().exec(),
    ctx.m.duressPins.countDocuments({ _id: userId }).exec(),
  ]);
  const fixes = await ctx.m.fixes
    .find({ timerId: { $in: timers.map((t) => t._id) } })
    .sort({ timerId: 1, at: 1 })
    .lean<FixDoc[]>()
    .exec();
  // the keys live on the records they made: a timer's creation key and its commands' keys, an incident's panic keys
  const idempotencyRecords =
    timers.reduce((n, t) => n + (t.idemScope ? 1 : 0) + (t.cmdKeys?.length ?? 0), 0) +
    incidents.reduce((n, i) => n + (i.sosKeys?.length ?? 0), 0);
  return {
    timers: timers.map(toTimer),
    fixes: fixes.map(toFix),
    contacts: contacts?.contacts.map((c) => ({ id: c.id, name: c.name, phone: c.phone })) ?? [],
    // the list's language and time zone are fields of the contacts document
    contactSettings: toContactSettings(contacts),
    duressPinSet: duressPins > 0,
    notifications: notifications.map(toNotification),
    incidents: incidents.map(toIncident),
    idempotencyRecords,
  };
}

export async function erasePerson(ctx: Ctx, userId: string, pseudonym: string): Promise<ErasureResult> {
  const open = await ctx.m.incidents.findOne({ openUser: userId }, { _id: 1 }).lean<Pick<IncidentDoc, '_id'>>().exec();
  if (open) return { kind: 'incident_open', incidentId: open._id };
  const live = await ctx.m.timers.findOne({ liveUser: userId }, { _id: 1 }).lean<Pick<TimerDoc, '_id'>>().exec();
  if (live) return { kind: 'timer_live', timerId: live._id };
  const w = { writeConcern: ctx.wc };
  const timerIds = (await ctx.m.timers.find({ userId }, { _id: 1 }).lean<Pick<TimerDoc, '_id'>[]>().exec()).map((t) => t._id);
  const counts: ErasedCounts = {
    fixes: (await ctx.m.fixes.deleteMany({ timerId: { $in: timerIds } }, w).exec()).deletedCount,
    // the creation and command keys go with the timers
    idempotencyRecords: 0,
    timers: 0,
    contacts: 0,
    duressPin: 0,
    notifications: 0,
    incidents: 0,
    deliveries: 0,
    auditLines: 0,
  };
  const keyed = await ctx.m.timers.find({ userId }, { idemScope: 1, cmdKeys: 1 }).lean<TimerDoc[]>().exec();
  counts.idempotencyRecords = keyed.reduce((n, t) => n + (t.idemScope ? 1 : 0) + (t.cmdKeys?.length ?? 0), 0);
  counts.timers = (await ctx.m.timers.deleteMany({ userId }, w).exec()).deletedCount;
  const list = await ctx.m.contacts.findById(userId, { contacts: 1 }).lean<ContactsDoc>().exec();
  if ((await ctx.m.contacts.deleteOne({ _id: userId }, w).exec()).deletedCount === 1) counts.contacts = list?.contacts.length ?? 0;
  counts.notifications = (await ctx.m.notifications.deleteMany({ userId }, w).exec()).deletedCount;
  counts.duressPin = (await ctx.m.duressPins.deleteOne({ _id: userId }, w).exec()).deletedCount;
  // the panic keys live on the incidents; the incidents stay for review under the pseudonym
  const panicKeys = await ctx.m.incidents
    .find({ userId, 'sosKeys.0': { $exists: true } }, { sosKeys: 1 })
    .lean<IncidentDoc[]>()
    .exec();
  counts.idempotencyRecords += panicKeys.reduce((n, i) => n + (i.sosKeys?.length ?? 0), 0);
  counts.incidents = (
    await ctx.m.incidents
      .updateMany(
        { userId },
        { $set: { userId: pseudonym }, $unset: { displayName: 1, sosKeys: 1, contactAcks: 1 }, $currentDate: { updatedAt: true } },
        w,
      )
      .exec()
  ).modifiedCount;
  counts.deliveries = (await ctx.m.deliveries.updateMany({ userId }, { $set: { userId: pseudonym } }, w).exec()).modifiedCount;
  // a revocation line names the person in its id: copied under the new id, then the old one removed
  const revocations = await ctx.m.audit.find({ target: userId, action: 'user.revoke_tokens' }).lean<AuditDoc[]>().exec();
  for (const a of revocations) {
    const id = `revoke:${pseudonym}${a._id.slice(`revoke:${userId}`.length)}`;
    try {
      await ctx.m.audit.insertMany([{ ...a, _id: id, target: pseudonym, person: pseudonym }], { ...insertOptions(ctx, true), lean: true });
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
    await ctx.m.audit.deleteOne({ _id: a._id }, w).exec();
  }
  await ctx.m.audit.updateMany({ target: userId }, { $set: { target: pseudonym } }, w).exec();
  counts.auditLines =
    (await ctx.m.audit.updateMany({ person: userId }, { $set: { person: pseudonym } }, w).exec()).modifiedCount + revocations.length;
  return { kind: 'erased', counts };
}
