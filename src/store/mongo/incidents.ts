/** Incident queries of the MongoDB store. */
import { OPEN_INCIDENT, type Incident, type IncidentStatus } from '../../domain/incident.js';
import { moderatorStep } from '../../domain/moderation.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import type { Timer } from '../../domain/timer.js';
import type { ChangedSince, OpenedIncident, TransitionOptions } from '../port.js';
import { toIncident } from './docs.js';
import { isDuplicateKey, isWriteConcernError } from './errors.js';
import { writeAudit } from './moderation.js';
import type { IncidentDoc } from './schemas.js';
import { casOne, changedAfter, defined, insertOptions, newOp, noneWanted, rereadMajority, unknownOutcome, type Ctx } from './writes.js';

/** The incident document of an expired timer (open: it takes the person's `openUser` slot). */
export function timerIncidentDoc(timer: Timer, fence: number, id: string, now: Date): IncidentDoc {
  return {
    _id: id,
    timerId: timer.id,
    userId: timer.userId,
    status: 'active',
    deadline: timer.expiresAt,
    createdAt: now,
    updatedAt: now,
    fence,
    openUser: timer.userId,
    lastOp: newOp(),
    ...defined({ locationName: timer.locationName, location: timer.location, displayName: timer.displayName, meeting: timer.meeting }),
  };
}

/**
 * `timerId` joins the person's open incident `open`: listed in `linkedTimers`, `timer` among the
 * sources (one open SOS per person). Idempotent ($addToSet; the source only when missing).
 */
export async function joinIncident(ctx: Ctx, open: IncidentDoc, timerId: string): Promise<IncidentDoc> {
  if (open.timerId === timerId) return open;
  const addSource = open.sources !== undefined && !open.sources.includes('timer');
  const d = await ctx.m.incidents
    .findOneAndUpdate(
      { _id: open._id },
      {
        $addToSet: { linkedTimers: timerId, ...(addSource ? { sources: 'timer' } : {}) },
        $set: { lastOp: newOp() },
        $currentDate: { updatedAt: true },
      },
      { new: true, writeConcern: ctx.wc },
    )
    .lean<IncidentDoc>()
    .exec();
  return d ?? open;
}

/**
 * Insert the incident, or return the one that exists: the unique index on timerId makes
 * concurrent openers agree (invariant 3). While the person has another open incident the
 * insert is refused too (unique `openUser`) and the timer joins that one. Insert first: the
 * common path is one round trip. A refused insert whose cause closed meanwhile is tried again.
 */
export async function openIncident(ctx: Ctx, timer: Timer, fence: number, id: string): Promise<OpenedIncident> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const now = await ctx.now();
    const doc = timerIncidentDoc(timer, fence, id, now);
    try {
      await ctx.m.incidents.insertMany([doc], insertOptions(ctx, true));
      return { incident: toIncident(doc), created: true };
    } catch (err) {
      if (isWriteConcernError(err)) {
        const seen = await rereadMajority(err, () =>
          ctx.m.incidents.findOne({ timerId: timer.id }).readConcern('majority').lean<IncidentDoc>().exec(),
        );
        if (seen) return { incident: toIncident(seen), created: seen._id === id };
        throw unknownOutcome(err);
      }
      if (!isDuplicateKey(err)) throw err;
    }
    const [own, open] = await Promise.all([
      ctx.m.incidents.findOne({ timerId: timer.id }).readConcern('majority').lean<IncidentDoc>().exec(),
      ctx.m.incidents.findOne({ openUser: timer.userId }).readConcern('majority').lean<IncidentDoc>().exec(),
    ]);
    if (own) return { incident: toIncident(own), created: false };
    if (open) return { incident: toIncident(await joinIncident(ctx, open, timer.id)), created: false, joined: true };
  }
  throw new Error(`incident ${id}: the insert for timer ${timer.id} kept being refused with no incident to join`);
}

export async function getIncident(ctx: Ctx, id: string): Promise<Incident | null> {
  const d = await ctx.m.incidents.findById(id).lean<IncidentDoc>().exec();
  return d ? toIncident(d) : null;
}

export async function incidentForTimer(ctx: Ctx, timerId: string): Promise<Incident | null> {
  const d = await ctx.m.incidents.findOne({ timerId }).lean<IncidentDoc>().exec();
  return d ? toIncident(d) : null;
}

export async function listIncidents(ctx: Ctx, filter: { status?: IncidentStatus } & ChangedSince = {}): Promise<Incident[]> {
  if (noneWanted(filter.limit)) return [];
  const q = ctx.m.incidents.find({
    ...(filter.status ? { status: filter.status } : {}),
    ...(filter.since ? changedAfter(filter.since, filter.sinceId) : {}),
  });
  const sorted = filter.since ? q.sort({ updatedAt: 1, _id: 1 }) : q.sort({ createdAt: 1, _id: 1 });
  const limit = filter.limit ?? PAGE_SIZE;
  const docs = await sorted.limit(limit).batchSize(limit).lean<IncidentDoc[]>().exec();
  return docs.map(toIncident);
}

/** CAS incident from one of `from` to `to`, stamping who and when. */
export async function transitionIncident(
  ctx: Ctx,
  id: string,
  from: readonly IncidentStatus[],
  to: IncidentStatus,
  by: string,
  opts: TransitionOptions = {},
): Promise<Incident | null> {
  if (from.length === 0) {
    if (opts.audit) await reauditStep(ctx, id, to);
    return null;
  }
  const now = await ctx.now();
  const stamp = to === 'acknowledged' ? { acknowledgedAt: now, acknowledgedBy: by } : { resolvedAt: now, resolvedBy: by };
  // the false alarm and the all-clear it owes, in one write
  const owed = to === 'false_alarm' || (to === 'resolved' && opts.closingTexts) ? { allClear: 'pending' as const } : {};
  const d = await casOne(ctx, ctx.m.incidents, {
    filter: { _id: id, status: { $in: [...from] } },
    // updatedAt from the server as it applies the write (see ./timers.ts)
    update: (op) => ({
      $set: { status: to, lastOp: op, ...stamp, ...owed },
      $currentDate: { updatedAt: true },
      // a closed incident frees the person's slot for their next SOS (./safety.ts, openIncident)
      ...(OPEN_INCIDENT.includes(to) ? {} : { $unset: { openUser: 1 } }),
    }),
  });
  if (!d) return null;
  const moved = toIncident(d);
  // no transaction: the line follows the CAS under an id derived from the step; a repeat fills it in
  if (opts.audit) await writeAudit(ctx, [moderatorStep(moved, to, by)]);
  return moved;
}

/** The audit line of the step `to` an incident already took, with who took it (stamped by its CAS). */
async function reauditStep(ctx: Ctx, id: string, to: IncidentStatus): Promise<void> {
  const doc = await ctx.m.incidents.findById(id).lean<IncidentDoc>().exec();
  if (!doc) return;
  const by = to === 'acknowledged' ? doc.acknowledgedBy : doc.status === to ? doc.resolvedBy : undefined;
  if (by !== undefined) await writeAudit(ctx, [moderatorStep(toIncident(doc), to, by)]);
}

/** CAS resolved with no all-clear recorded → pending ("I'm safe" after a resolve that texted nobody). */
export async function oweAllClear(ctx: Ctx, id: string): Promise<Incident | null> {
  const d = await casOne(ctx, ctx.m.incidents, {
    filter: { _id: id, status: 'resolved', allClear: { $exists: false } },
    update: (op) => ({ $set: { allClear: 'pending', lastOp: op }, $currentDate: { updatedAt: true } }),
  });
  return d ? toIncident(d) : null;
}

/**
 * Incidents whose outbox step `step` is pending, oldest first by `by` (the index of that step),
 * read from a majority: a repair acts only on what the write that left it pending made durable.
 */
export async function pendingIncidents(
  ctx: Ctx,
  step: 'allClear' | 'panicTexts',
  by: 'updatedAt' | 'createdAt',
  limit: number,
): Promise<Incident[]> {
  if (noneWanted(limit)) return [];
  const docs = await ctx.m.incidents
    .find({ [step]: 'pending' })
    .sort({ [by]: 1, _id: 1 })
    .limit(limit)
    .batchSize(limit)
    .readConcern('majority')
    .lean<IncidentDoc[]>()
    .exec();
  return docs.map(toIncident);
}

export const pendingAllClears = (ctx: Ctx, limit: number): Promise<Incident[]> => pendingIncidents(ctx, 'allClear', 'updatedAt', limit);

/** CAS allClear pending → done (a change clients catching up with `since` see). */
export async function markAllClearDone(ctx: Ctx, incidentId: string): Promise<boolean> {
  const now = await ctx.now();
  const d = await casOne(ctx, ctx.m.incidents, {
    filter: { _id: incidentId, allClear: 'pending' },
    update: (op) => ({ $set: { allClear: 'done', updatedAt: now, lastOp: op } }),
  });
  return d !== null;
}
