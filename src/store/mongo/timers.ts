/**
 * Timer queries of the MongoDB store. Every transition is one `findOneAndUpdate`
 * filtered on id, owner and the allowed current states (never find-then-save; extend
 * reads first, then compares on exactly what it read); a timer
 * leaving the live states `$unset`s `liveUser`, which frees the person's slot in the
 * unique "one live timer" index.
 */
import { Conflict } from '../../domain/errors.js';
import { extendedDeadline, type ExtensionCaps } from '../../domain/extension.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import { LIVE, type Timer, type TimerStatus } from '../../domain/timer.js';
import type { ArmResult, ChangedSince, IdempotencyClaim, NewTimer } from '../port.js';
import { claimBatch } from './claim.js';
import { toTimer } from './docs.js';
import { isDuplicateKey, isWriteConcernError } from './errors.js';
import type { TimerDoc } from './schemas.js';
import { casOne, defined, insertOptions, newOp, noneWanted, rereadMajority, unknownOutcome, type Ctx } from './writes.js';

const live = { $in: [...LIVE] };

/** The idempotency scope: unambiguous for any user id and key (no separator to collide on). */
const idemScope = (userId: string, key: string): string => JSON.stringify([userId, key]);

const byIdMajority = (ctx: Ctx, id: string) => () => ctx.m.timers.findById(id).readConcern('majority').lean<TimerDoc>().exec();

/**
 * Arm without a transaction (FerretDB has none): the idempotency claim lives in the timer
 * document, so one insert is checked against both unique indexes, "one live timer per
 * person" (`liveUser`) and "one timer per key" (`idemScope`), with nothing to roll back.
 * When refused, look up why (FerretDB's E11000 does not name the index): the key first
 * (a replay wins over "already live"), then the live timer; if neither is left, retry.
 */
export async function armTimer(ctx: Ctx, t: NewTimer, idem?: IdempotencyClaim): Promise<ArmResult> {
  const now = await ctx.now();
  const op = newOp();
  const doc: TimerDoc = {
    _id: t.id,
    userId: t.userId,
    status: 'active',
    startedAt: t.startedAt,
    expiresAt: t.expiresAt,
    updatedAt: now,
    extensions: 0,
    escalation: 'none',
    liveUser: t.userId,
    lastOp: op,
    ...defined({ locationName: t.locationName, location: t.location, displayName: t.displayName }),
    ...(idem ? { idemScope: idemScope(t.userId, idem.key), idemFingerprint: idem.fingerprint } : {}),
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await ctx.m.timers.insertMany([doc], insertOptions(ctx, true));
      return { kind: 'created', timer: toTimer(doc) };
    } catch (err) {
      // refused by a unique index: nothing was written, whatever the write concern says
      if (!isDuplicateKey(err)) {
        if (!isWriteConcernError(err)) throw err;
        const seen = await rereadMajority(err, byIdMajority(ctx, t.id));
        if (seen?.lastOp === op) return { kind: 'created', timer: toTimer(seen) };
        throw unknownOutcome(err);
      }
    }
    if (idem) {
      const prior = await ctx.m.timers.findOne({ idemScope: idemScope(t.userId, idem.key) }).lean<TimerDoc>().exec();
      if (prior) return prior.idemFingerprint === idem.fingerprint ? { kind: 'replayed', timer: toTimer(prior) } : { kind: 'idempotency_mismatch' };
    }
    const current = await ctx.m.timers.findOne({ liveUser: t.userId }).lean<TimerDoc>().exec();
    if (current) return { kind: 'live_timer_exists', timer: toTimer(current) };
    if (await ctx.m.timers.exists({ _id: t.id }).exec()) throw Conflict('timer_id_taken', `a timer with id ${t.id} already exists`);
  }
  throw Conflict('arm_contended', 'the timer could not be armed: the person’s live timer kept changing; retry');
}

export async function getTimer(ctx: Ctx, id: string, userId?: string): Promise<Timer | null> {
  const d = await ctx.m.timers
    .findOne(userId === undefined ? { _id: id } : { _id: id, userId })
    .lean<TimerDoc>()
    .exec();
  return d ? toTimer(d) : null;
}

export async function listTimers(ctx: Ctx, userId: string, filter: { status?: TimerStatus } & ChangedSince = {}): Promise<Timer[]> {
  if (noneWanted(filter.limit)) return [];
  const q = ctx.m.timers.find({
    userId,
    ...(filter.status ? { status: filter.status } : {}),
    ...(filter.since ? { updatedAt: { $gt: filter.since } } : {}),
  });
  const sorted = filter.since ? q.sort({ updatedAt: 1, _id: 1 }) : q.sort({ startedAt: -1, _id: -1 });
  const limit = filter.limit ?? PAGE_SIZE;
  const docs = await sorted.limit(limit).batchSize(limit).lean<TimerDoc[]>().exec();
  return docs.map(toTimer);
}

/** A lost compare-and-swap is retried this many times before the caller is told to retry. */
const EXTEND_ATTEMPTS = 5;

/**
 * CAS live → extended without an update pipeline (FerretDB v1 has none, and no `$expr`):
 * read the timer, let the domain rule compute the new deadline on the store clock, then
 * one `findOneAndUpdate` filtered on the values read (`expiresAt`, `extensions`, still
 * live). Every extension changes both, so the filter is the compare: a concurrent extend,
 * resolve or sweep makes it match nothing, and the loop re-reads and decides again.
 */
export async function extendTimer(ctx: Ctx, id: string, userId: string, seconds: number, caps: ExtensionCaps): Promise<Timer | null> {
  for (let attempt = 0; attempt < EXTEND_ATTEMPTS; attempt++) {
    const read = await ctx.m.timers.findOne({ _id: id, userId }).lean<TimerDoc>().exec();
    if (!read) return null;
    // the clock after the read: the deadline check is at least as late as what was read
    const now = await ctx.now();
    const next = extendedDeadline(read, seconds, caps, now);
    if (!next) return null;
    const d = await casOne(ctx, ctx.m.timers, {
      filter: { _id: id, userId, status: live, expiresAt: read.expiresAt, extensions: read.extensions },
      update: (op) => ({ $set: { expiresAt: next.expiresAt, status: 'extended', extensions: next.extensions, updatedAt: now, lastOp: op } }),
    });
    if (d) return toTimer(d);
  }
  throw Conflict('extend_contended', 'the timer kept changing while it was being extended; retry');
}

/** CAS live → safe | cancelled. */
export async function resolveTimer(ctx: Ctx, id: string, userId: string, to: 'safe' | 'cancelled'): Promise<Timer | null> {
  const now = await ctx.now();
  const d = await casOne(ctx, ctx.m.timers, {
    filter: { _id: id, userId, status: live },
    update: (op) => ({ $set: { status: to, resolvedAt: now, updatedAt: now, lastOp: op }, $unset: { liveUser: 1 } }),
  });
  return d ? toTimer(d) : null;
}

/**
 * Batched claim (./claim.ts): live and due → expired, escalation pending. A claim whose
 * commit was unconfirmed is found by pendingEscalations once it commits.
 */
export async function claimDueTimers(ctx: Ctx, limit: number, fence: number): Promise<Timer[]> {
  if (noneWanted(limit)) return [];
  const now = await ctx.now();
  const mine = await claimBatch(ctx, ctx.m.timers, {
    due: { status: live, expiresAt: { $lte: now } },
    order: 'expiresAt',
    limit,
    update: { $set: { status: 'expired', escalation: 'pending', resolvedAt: now, updatedAt: now, expiredByFence: fence }, $unset: { liveUser: 1 } },
  });
  return mine.map(toTimer);
}

export async function pendingEscalations(ctx: Ctx, limit: number): Promise<Timer[]> {
  if (noneWanted(limit)) return [];
  const docs = await ctx.m.timers
    .find({ escalation: 'pending' })
    .sort({ expiresAt: 1, _id: 1 })
    .limit(limit)
    .batchSize(limit)
    .readConcern('majority')
    .lean<TimerDoc[]>()
    .exec();
  return docs.map(toTimer);
}

/** CAS escalation pending → done. */
export async function markEscalated(ctx: Ctx, timerId: string, incidentId: string): Promise<boolean> {
  const now = await ctx.now();
  const d = await casOne(ctx, ctx.m.timers, {
    filter: { _id: timerId, escalation: 'pending' },
    update: (op) => ({ $set: { escalation: 'done', incidentId, updatedAt: now, lastOp: op } }),
  });
  return d !== null;
}

/** Live timers past the deadline: two index-backed reads on {status, expiresAt}. */
export async function overdue(ctx: Ctx): Promise<{ count: number; oldest?: Date }> {
  const now = await ctx.now();
  const due = { status: live, expiresAt: { $lte: now } };
  const [count, oldest] = await Promise.all([
    ctx.m.timers.countDocuments(due).readConcern('majority').exec(),
    ctx.m.timers.findOne(due, { expiresAt: 1 }).sort({ expiresAt: 1 }).readConcern('majority').lean<Pick<TimerDoc, 'expiresAt'>>().exec(),
  ]);
  return oldest ? { count, oldest: oldest.expiresAt } : { count };
}
