/**
 * Moderator actions on the MongoDB store. There are no multi-document transactions here
 * (FerretDB, standalone servers): the change is one CAS that also records who made it
 * (`moderatedBy`, the note's author), and the audit line follows it, upserted under an id
 * derived from the fact. A repeated request writes the line again: it stays one line, and
 * one lost to a crash between the two writes is filled in.
 */
import type { Delivery, DeliveryStatus } from '../../domain/delivery.js';
import {
  auditId,
  CANCELLED_BY_MODERATOR,
  type AuditEntry,
  type AuditFilter,
  type IncidentNote,
  type NewAuditLine,
} from '../../domain/moderation.js';
import type { AuditPosition, NewNote } from '../port-moderation.js';
import type { Incident } from '../../domain/incident.js';
import { toDelivery, toIncident } from './docs.js';
import { isDuplicateKey, isWriteConcernError } from './errors.js';
import type { AuditDoc, NoteDoc } from './moderation-schemas.js';
import type { DeliveryDoc, IncidentDoc } from './schemas.js';
import { bulkUpdate, casOne, insertOptions, newOp, noneWanted, unknownOutcome, writeThenRead, type Ctx } from './writes.js';

export { redactClosed } from './retention.js';

/** Upsert audit lines (insert-once by id); an unconfirmed write is an unknown outcome the caller retries. */
export async function writeAudit(ctx: Ctx, lines: NewAuditLine[]): Promise<void> {
  if (lines.length === 0) return;
  const at = await ctx.now();
  try {
    await bulkUpdate(
      ctx,
      ctx.m.audit,
      lines.map((l) => ({
        updateOne: {
          filter: { _id: l.id },
          update: {
            $setOnInsert: {
              at,
              actor: l.actor,
              action: l.action,
              target: l.target,
              ...(l.incidentId === undefined ? {} : { incidentId: l.incidentId }),
              ...(l.person === undefined ? {} : { person: l.person }),
              ...(l.reason === undefined ? {} : { reason: l.reason }),
            },
          },
          upsert: true,
        },
      })),
    );
  } catch (err) {
    if (isWriteConcernError(err)) throw unknownOutcome(err);
    if (!isDuplicateKey(err)) throw err; // two upserts of one id racing: the other one wrote it
  }
}

const ON_ITS_WAY: DeliveryStatus[] = ['pending', 'sending'];

/**
 * The message sent before the resend becomes an earlier one (receipts about it no longer move the
 * delivery). Which message that is, is read first and made part of the CAS's condition (a field
 * cannot be moved into an array by a plain update), so the CAS still applies only to what was read.
 */
export async function resendDelivery(ctx: Ctx, key: string, actor: string): Promise<Delivery | null> {
  const now = await ctx.now();
  const seen = await ctx.m.deliveries.findById(key, { providerMessageId: 1 }).lean<Pick<DeliveryDoc, 'providerMessageId'>>().exec();
  const pid = seen?.providerMessageId;
  const d = await casOne(ctx, ctx.m.deliveries, {
    filter: {
      _id: key,
      status: { $in: ['dead', 'failed'] },
      redactedAt: { $exists: false },
      providerMessageId: pid === undefined ? { $exists: false } : pid,
    },
    update: (op) => ({
      $set: { status: 'pending', attempts: 0, nextAttemptAt: now, updatedAt: now, lastOp: op, moderatedBy: actor },
      $inc: { resends: 1 },
      $unset: { leaseUntil: 1, claimToken: 1, ...(pid === undefined ? {} : { providerMessageId: 1 }) },
      ...(pid === undefined ? {} : { $push: { earlierMessageIds: pid } }),
    }),
  });
  const cur = d ?? (await ctx.m.deliveries.findById(key).lean<DeliveryDoc>().exec());
  // applied now, or a repeat of a resend that applied: (re)write its line
  if (cur?.resends && cur.moderatedBy && (d || ON_ITS_WAY.includes(cur.status)))
    await writeAudit(ctx, [
      {
        id: auditId.resend(key, cur.resends),
        actor: cur.moderatedBy,
        action: 'delivery.resend',
        target: key,
        incidentId: cur.incidentId,
        person: cur.userId,
      },
    ]);
  return d ? toDelivery(d) : null;
}

/** pending → superseded in one updateMany tagged with a token; what carries the token is what this call moved. */
export async function cancelPendingDeliveries(ctx: Ctx, incidentId: string, actor: string): Promise<Delivery[]> {
  const now = await ctx.now();
  const op = newOp();
  const q = ctx.m.deliveries.find({ incidentId, status: 'superseded', lastError: CANCELLED_BY_MODERATOR }).sort({ createdAt: 1, _id: 1 });
  const cancelled = await writeThenRead(
    () =>
      ctx.m.deliveries
        .updateMany(
          { incidentId, status: 'pending' },
          { $set: { status: 'superseded', lastError: CANCELLED_BY_MODERATOR, updatedAt: now, lastOp: op, moderatedBy: actor } },
          { writeConcern: ctx.wc },
        )
        .exec(),
    (majority) => (majority ? q.readConcern('majority') : q).lean<DeliveryDoc[]>().exec(),
  );
  // every cancellation of the incident, earlier ones too: a line lost to a crash is filled in
  await writeAudit(
    ctx,
    cancelled.map((c) => ({
      id: auditId.cancel(c._id),
      actor: c.moderatedBy ?? actor,
      action: 'delivery.cancel' as const,
      target: c._id,
      incidentId,
      person: c.userId,
    })),
  );
  return cancelled.filter((c) => c.lastOp === op).map(toDelivery);
}

const toNote = (d: NoteDoc): IncidentNote => ({
  id: d._id,
  incidentId: d.incidentId,
  author: d.author,
  text: d.text,
  createdAt: d.createdAt,
  ...(d.redactedAt ? { redactedAt: d.redactedAt } : {}),
});

export async function addIncidentNote(ctx: Ctx, n: NewNote): Promise<{ note: IncidentNote; created: boolean }> {
  const now = await ctx.now();
  const doc: NoteDoc = { _id: n.id, incidentId: n.incidentId, author: n.author, text: n.text, createdAt: now };
  let created = true;
  try {
    await ctx.m.notes.insertMany([doc], insertOptions(ctx, true));
  } catch (err) {
    if (isWriteConcernError(err)) throw unknownOutcome(err);
    if (!isDuplicateKey(err)) throw err;
    created = false;
  }
  const note = created ? doc : await ctx.m.notes.findById(n.id).lean<NoteDoc>().exec();
  if (!note) throw new Error(`note ${n.id}: refused as a duplicate but not found`);
  await writeAudit(ctx, [
    {
      id: auditId.note(n.id),
      actor: note.author,
      action: 'incident.note',
      target: n.incidentId,
      incidentId: n.incidentId,
      person: n.person,
    },
  ]);
  // a note is a change of the incident: clients following `since` see it
  if (created)
    await ctx.m.incidents.updateOne({ _id: n.incidentId }, { $currentDate: { updatedAt: true } }, { writeConcern: ctx.wc }).exec();
  return { note: toNote(note), created };
}

export async function notesFor(ctx: Ctx, incidentIds: string[]): Promise<IncidentNote[]> {
  if (incidentIds.length === 0) return [];
  const docs = await ctx.m.notes
    .find({ incidentId: { $in: incidentIds } })
    .sort({ createdAt: 1, _id: 1 })
    .lean<NoteDoc[]>()
    .exec();
  return docs.map(toNote);
}

export async function listAudit(ctx: Ctx, page: { before?: AuditPosition; limit: number; filter?: AuditFilter }): Promise<AuditEntry[]> {
  if (noneWanted(page.limit)) return [];
  const b = page.before;
  const f = page.filter ?? {};
  const match = {
    ...(f.actor === undefined ? {} : { actor: f.actor }),
    ...(f.person === undefined ? {} : { person: f.person }),
    ...(f.incidentId === undefined ? {} : { incidentId: f.incidentId }),
  };
  const docs = await ctx.m.audit
    .find(b ? { ...match, $or: [{ at: { $lt: b.at } }, { at: b.at, _id: { $lt: b.id } }] } : match)
    .sort({ at: -1, _id: -1 })
    .limit(page.limit)
    .lean<AuditDoc[]>()
    .exec();
  return docs.map((d) => ({
    id: d._id,
    at: d.at,
    actor: d.actor,
    action: d.action,
    target: d.target,
    ...(d.incidentId === undefined || d.incidentId === null ? {} : { incidentId: d.incidentId }),
    ...(d.person === undefined || d.person === null ? {} : { person: d.person }),
    ...(d.reason === undefined || d.reason === null ? {} : { reason: d.reason }),
  }));
}

/** A read's lines: their ids are fresh per request, so there is nothing to fill in later; written before the read. */
export async function recordAccess(ctx: Ctx, lines: NewAuditLine[]): Promise<void> {
  await writeAudit(ctx, lines);
}

export async function openIncidentOf(ctx: Ctx, userId: string): Promise<Incident | null> {
  const d = await ctx.m.incidents.findOne({ openUser: userId }).lean<IncidentDoc>().exec();
  return d ? toIncident(d) : null;
}
