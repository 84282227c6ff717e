/** Incident queries of the MongoDB store. */
import { OPEN_INCIDENT, type Incident, type IncidentStatus } from '../../domain/incident.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import type { Timer } from '../../domain/timer.js';
import type { ChangedSince } from '../port.js';
import { toIncident } from './docs.js';
import { isDuplicateKey, isWriteConcernError } from './errors.js';
import type { IncidentDoc } from './schemas.js';
import { casOne, changedAfter, defined, insertOptions, newOp, noneWanted, rereadMajority, unknownOutcome, type Ctx } from './writes.js';

/**
 * Insert the incident, or return the one that exists: the unique index on timerId makes
 * concurrent openers agree (invariant 3). Insert first: the common path is one round trip.
 */
export async function openIncident(ctx: Ctx, timer: Timer, fence: number, id: string): Promise<{ incident: Incident; created: boolean }> {
  const now = await ctx.now();
  const doc: IncidentDoc = {
    _id: id,
    timerId: timer.id,
    userId: timer.userId,
    status: 'active',
    deadline: timer.expiresAt,
    createdAt: now,
    updatedAt: now,
    fence,
    lastOp: newOp(),
    ...defined({ locationName: timer.locationName, location: timer.location, displayName: timer.displayName, meeting: timer.meeting }),
  };
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
  const existing = await ctx.m.incidents.findOne({ timerId: timer.id }).lean<IncidentDoc>().exec();
  if (!existing) throw new Error(`incident ${id}: the insert was refused as a duplicate but timer ${timer.id} has no incident`);
  return { incident: toIncident(existing), created: false };
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
): Promise<Incident | null> {
  if (from.length === 0) return null;
  const now = await ctx.now();
  const stamp = to === 'acknowledged' ? { acknowledgedAt: now, acknowledgedBy: by } : { resolvedAt: now, resolvedBy: by };
  // the false alarm and the all-clear it owes, in one write
  const owed = to === 'false_alarm' ? { allClear: 'pending' as const } : {};
  const d = await casOne(ctx, ctx.m.incidents, {
    filter: { _id: id, status: { $in: [...from] } },
    // updatedAt from the server as it applies the write (see ./timers.ts)
    update: (op) => ({
      $set: { status: to, lastOp: op, ...stamp, ...owed },
      $currentDate: { updatedAt: true },
      // a closed incident frees the person's slot for a panic incident (./safety.ts)
      ...(OPEN_INCIDENT.includes(to) ? {} : { $unset: { openUser: 1 } }),
    }),
  });
  return d ? toIncident(d) : null;
}

export async function pendingAllClears(ctx: Ctx, limit: number): Promise<Incident[]> {
  if (noneWanted(limit)) return [];
  const docs = await ctx.m.incidents
    .find({ allClear: 'pending' })
    .sort({ updatedAt: 1, _id: 1 })
    .limit(limit)
    .batchSize(limit)
    .readConcern('majority')
    .lean<IncidentDoc[]>()
    .exec();
  return docs.map(toIncident);
}

/** CAS allClear pending → done (a change clients catching up with `since` see). */
export async function markAllClearDone(ctx: Ctx, incidentId: string): Promise<boolean> {
  const now = await ctx.now();
  const d = await casOne(ctx, ctx.m.incidents, {
    filter: { _id: incidentId, allClear: 'pending' },
    update: (op) => ({ $set: { allClear: 'done', updatedAt: now, lastOp: op } }),
  });
  return d !== null;
}
