/**
 * Timer queries of the MongoDB store. Every transition is one `findOneAndUpdate`
 * filtered on id, owner and the allowed current states (never find-then-save; extend
 * reads first, then compares on exactly what it read); a timer
 * leaving the live states `$unset`s `liveUser`, which frees the person's slot in the
 * unique "one live timer" index.
 */
import type { QueryFilter } from 'mongoose';
import { Conflict } from '../../domain/errors.js';
import { extendedDeadline, type ExtensionCaps } from '../../domain/extension.js';
import { retryLine } from '../../domain/moderation.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import { ALL_SHARDS, sweepSlot, type SweepShard } from '../../domain/sweep-shard.js';
import { LIVE, type Timer, type TimerStatus } from '../../domain/timer.js';
import type { ArmResult, ChangedSince, IdempotencyClaim, KeyedCommandResult, NewTimer, ResolveOptions, StateCounts } from '../port.js';
import { claimBatch } from './claim.js';
import { toTimer } from './docs.js';
import { isDuplicateKey, isWriteConcernError } from './errors.js';
import { writeAudit } from './moderation.js';
import type { CommandKey, TimerDoc } from './schemas.js';
import { casOne, changedAfter, defined, insertOptions, newOp, noneWanted, rereadMajority, unknownOutcome, type Ctx } from './writes.js';

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
    slot: sweepSlot(t.id),
    ...defined({
      locationName: t.locationName,
      location: t.location,
      displayName: t.displayName,
      timeZone: t.timeZone,
      traceparent: t.traceparent,
      meeting: t.meeting,
    }),
    ...(idem ? { idemScope: idemScope(t.userId, idem.key), idemFingerprint: idem.fingerprint } : {}),
  };
  // a key that already applied a command is this person's too (the unique index covers arming keys only)
  if (idem && (await ctx.m.timers.exists({ userId: t.userId, 'cmdKeys.key': idem.key }).exec())) return { kind: 'idempotency_mismatch' };
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
      const prior = await ctx.m.timers
        .findOne({ idemScope: idemScope(t.userId, idem.key) })
        .lean<TimerDoc>()
        .exec();
      if (prior)
        return prior.idemFingerprint === idem.fingerprint ? { kind: 'replayed', timer: toTimer(prior) } : { kind: 'idempotency_mismatch' };
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
    ...(filter.since ? changedAfter(filter.since, filter.sinceId) : {}),
  });
  const sorted = filter.since ? q.sort({ updatedAt: 1, _id: 1 }) : q.sort({ startedAt: -1, _id: -1 });
  const limit = filter.limit ?? PAGE_SIZE;
  const docs = await sorted.limit(limit).batchSize(limit).lean<TimerDoc[]>().exec();
  return docs.map(toTimer);
}

/**
 * `updatedAt` is stamped by the server while it applies the write (`$currentDate`), not
 * with the time read before sending it. Inserts (arm, open incident) carry the clock read
 * just before; the store's change lag covers them.
 */
export async function extendTimer(ctx: Ctx, id: string, userId: string, seconds: number, caps: ExtensionCaps): Promise<Timer | null> {
  const d = await extendDoc(ctx, id, userId, seconds, caps);
  return d ? toTimer(d) : null;
}

/** A lost compare-and-swap is retried this many times before the caller is told to retry. */
const EXTEND_ATTEMPTS = 5;

/**
 * CAS live → extended without an update pipeline (FerretDB v1 has none, and no `$expr`):
 * read the timer, let the domain rule compute the new deadline on the store clock, then
 * one `findOneAndUpdate` filtered on the values read (`expiresAt`, `extensions`, still
 * live). Every extension changes both, so the filter is the compare: a concurrent extend,
 * resolve or sweep makes it match nothing, and the loop re-reads and decides again.
 * Under a command key the filter also requires the key to be absent; a read that finds
 * it answers null, and the caller looks the key up.
 */
async function extendDoc(
  ctx: Ctx,
  id: string,
  userId: string,
  seconds: number,
  caps: ExtensionCaps,
  key?: CommandKey,
): Promise<TimerDoc | null> {
  for (let attempt = 0; attempt < EXTEND_ATTEMPTS; attempt++) {
    const read = await ctx.m.timers.findOne({ _id: id, userId }).lean<TimerDoc>().exec();
    if (!read) return null;
    if (key && read.cmdKeys?.some((k) => k.key === key.key)) return null;
    // the clock after the read: the deadline check is at least as late as what was read
    const next = extendedDeadline(read, seconds, caps, await ctx.now());
    if (!next) return null;
    const d = await casOne(ctx, ctx.m.timers, {
      filter: {
        _id: id,
        userId,
        status: live,
        expiresAt: read.expiresAt,
        extensions: read.extensions,
        ...(key ? { 'cmdKeys.key': { $ne: key.key } } : {}),
      },
      update: (op) => ({
        $set: { expiresAt: next.expiresAt, status: 'extended', extensions: next.extensions, lastOp: op },
        $currentDate: { updatedAt: true },
        // a new deadline may warn again
        $unset: { warnedAt: 1 },
        ...(key ? { $push: { cmdKeys: key } } : {}),
      }),
    });
    if (d) return d;
  }
  throw Conflict('extend_contended', 'the timer kept changing while it was being extended; retry');
}

/** CAS live → safe | cancelled; under duress the same single-document write records the owed SOS. */
export async function resolveTimer(
  ctx: Ctx,
  id: string,
  userId: string,
  to: 'safe' | 'cancelled',
  o?: ResolveOptions,
): Promise<Timer | null> {
  const d = await resolveDoc(ctx, id, userId, to, o);
  return d ? toTimer(d) : null;
}

async function resolveDoc(
  ctx: Ctx,
  id: string,
  userId: string,
  to: 'safe' | 'cancelled',
  o: ResolveOptions = {},
  key?: CommandKey,
): Promise<TimerDoc | null> {
  const now = await ctx.now();
  return casOne(ctx, ctx.m.timers, {
    filter: { _id: id, userId, status: live, ...(key ? { 'cmdKeys.key': { $ne: key.key } } : {}) },
    update: (op) => ({
      $set: { status: to, resolvedAt: now, lastOp: op, ...(o.duress ? { duressPending: true } : {}) },
      $currentDate: { updatedAt: true },
      $unset: { liveUser: 1 },
      ...(key ? { $push: { cmdKeys: key } } : {}),
    }),
  });
}

export function extendTimerKeyed(
  ctx: Ctx,
  id: string,
  userId: string,
  seconds: number,
  caps: ExtensionCaps,
  idem: IdempotencyClaim,
): Promise<KeyedCommandResult> {
  return keyed(ctx, userId, idem, (key) => extendDoc(ctx, id, userId, seconds, caps, key));
}

export function resolveTimerKeyed(
  ctx: Ctx,
  id: string,
  userId: string,
  to: 'safe' | 'cancelled',
  idem: IdempotencyClaim,
  o?: ResolveOptions,
): Promise<KeyedCommandResult> {
  return keyed(ctx, userId, idem, (key) => resolveDoc(ctx, id, userId, to, o, key));
}

/**
 * A command under an Idempotency-Key. The key goes into the timer document by the same
 * findOneAndUpdate as the CAS, whose filter also requires the key to be absent, so two
 * retries of one command on one timer apply it once. Keys are looked up across the
 * person's timers (arming keys included) first, and again when the CAS is refused, in
 * case a concurrent retry just won it. Two requests racing with one key on two different
 * timers are not caught (each applies at most once).
 */
async function keyed(
  ctx: Ctx,
  userId: string,
  idem: IdempotencyClaim,
  cas: (key: CommandKey) => Promise<TimerDoc | null>,
): Promise<KeyedCommandResult> {
  const prior = await priorUse(ctx, userId, idem);
  if (prior) return prior;
  const d = await cas({ key: idem.key, fingerprint: idem.fingerprint });
  if (d) return { kind: 'applied', timer: toTimer(d) };
  return (await priorUse(ctx, userId, idem)) ?? { kind: 'refused' };
}

async function priorUse(ctx: Ctx, userId: string, idem: IdempotencyClaim): Promise<KeyedCommandResult | undefined> {
  const scope = idemScope(userId, idem.key);
  const d = await ctx.m.timers
    .findOne({ $or: [{ userId, 'cmdKeys.key': idem.key }, { idemScope: scope }] })
    .lean<TimerDoc>()
    .exec();
  if (!d) return undefined;
  const fingerprint = d.cmdKeys?.find((k) => k.key === idem.key)?.fingerprint ?? (d.idemScope === scope ? d.idemFingerprint : undefined);
  return fingerprint === idem.fingerprint ? { kind: 'replayed', timer: toTimer(d) } : { kind: 'idempotency_mismatch' };
}

/**
 * A sweep shard's timers (domain/sweep-shard.ts): a residual filter on the due (or pending)
 * documents the index already narrowed to. Timers armed before slots existed have none and
 * belong to shard 0.
 */
function inShard(shard: SweepShard): QueryFilter<TimerDoc> {
  if (shard.of <= 1) return {};
  const mine: QueryFilter<TimerDoc> = { slot: { $mod: [shard.of, shard.index] } };
  return shard.index === 0 ? { $or: [mine, { slot: { $exists: false } }] } : mine;
}

/**
 * Batched claim (./claim.ts): live and due → expired, escalation pending. A claim whose
 * commit was unconfirmed is found by pendingEscalations once it commits.
 */
export async function claimDueTimers(
  ctx: Ctx,
  limit: number,
  fence: number,
  graceMs = 0,
  shard: SweepShard = ALL_SHARDS,
): Promise<Timer[]> {
  if (noneWanted(limit)) return [];
  const now = await ctx.now();
  const mine = await claimBatch(ctx, ctx.m.timers, {
    due: { status: live, expiresAt: { $lte: new Date(now.getTime() - graceMs) }, ...inShard(shard) },
    order: 'expiresAt',
    limit,
    update: {
      $set: { status: 'expired', escalation: 'pending', resolvedAt: now, expiredByFence: fence },
      $currentDate: { updatedAt: true },
      $unset: { liveUser: 1 },
    },
  });
  return mine.map(toTimer);
}

export async function pendingEscalations(ctx: Ctx, limit: number, shard: SweepShard = ALL_SHARDS): Promise<Timer[]> {
  if (noneWanted(limit)) return [];
  const docs = await ctx.m.timers
    .find({ escalation: 'pending', ...inShard(shard) })
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
  const d = await casOne(ctx, ctx.m.timers, {
    filter: { _id: timerId, escalation: 'pending' },
    update: (op) => ({ $set: { escalation: 'done', incidentId, lastOp: op }, $currentDate: { updatedAt: true } }),
  });
  return d !== null;
}

export async function maxRecordedFence(ctx: Ctx): Promise<number> {
  const [incident, pending] = await Promise.all([
    ctx.m.incidents.findOne({}, { fence: 1 }).sort({ fence: -1 }).readConcern('majority').lean<{ fence: number }>().exec(),
    // few rows: the pending ones (escalation_pending index), sorted in memory
    ctx.m.timers
      .findOne({ escalation: 'pending' }, { expiredByFence: 1 })
      .sort({ expiredByFence: -1 })
      .readConcern('majority')
      .lean<{ expiredByFence?: number }>()
      .exec(),
  ]);
  return Math.max(incident?.fence ?? 0, pending?.expiredByFence ?? 0);
}

/** Live timers and open incidents by status: one index-backed count each ({status, expiresAt}, {status, createdAt}). */
export async function stateCounts(ctx: Ctx): Promise<StateCounts> {
  const timers = (status: 'active' | 'extended') => ctx.m.timers.countDocuments({ status }).readConcern('majority').exec();
  const incidents = (status: 'active' | 'acknowledged') => ctx.m.incidents.countDocuments({ status }).readConcern('majority').exec();
  const [active, extended, open, acknowledged] = await Promise.all([
    timers('active'),
    timers('extended'),
    incidents('active'),
    incidents('acknowledged'),
  ]);
  return { timers: { active, extended }, incidents: { active: open, acknowledged } };
}

/** When the oldest still unacknowledged incident was opened: one entry of the {status, createdAt} index. */
export async function oldestUnacknowledged(ctx: Ctx): Promise<Date | undefined> {
  const doc = await ctx.m.incidents
    .findOne({ status: 'active' }, { createdAt: 1 })
    .sort({ status: 1, createdAt: 1 })
    .readConcern('majority')
    .lean<{ createdAt: Date }>()
    .exec();
  return doc?.createdAt;
}

export async function countPendingEscalations(ctx: Ctx): Promise<number> {
  return ctx.m.timers.countDocuments({ escalation: 'pending' }).readConcern('majority').exec();
}

/**
 * Count a failed escalation, then dead-letter it at `maxAttempts`: two CAS (a conditional
 * `$set` would need an update pipeline, which FerretDB lacks). Between the two the timer is
 * still pending with its count reached; the next failure (or repair) moves it.
 */
export async function recordEscalationFailure(ctx: Ctx, timerId: string, error: string, maxAttempts: number): Promise<Timer | null> {
  const counted = await casOne(ctx, ctx.m.timers, {
    filter: { _id: timerId, escalation: 'pending' },
    update: (op) => ({ $set: { escalationError: error, lastOp: op }, $inc: { escalationAttempts: 1 }, $currentDate: { updatedAt: true } }),
  });
  if (!counted || (counted.escalationAttempts ?? 0) < maxAttempts) return counted ? toTimer(counted) : null;
  const failed = await casOne(ctx, ctx.m.timers, {
    filter: { _id: timerId, escalation: 'pending', escalationAttempts: { $gte: maxAttempts } },
    update: (op) => ({ $set: { escalation: 'failed', lastOp: op }, $currentDate: { updatedAt: true } }),
  });
  return toTimer(failed ?? counted);
}

export async function failedEscalations(ctx: Ctx, limit: number): Promise<Timer[]> {
  if (noneWanted(limit)) return [];
  const docs = await ctx.m.timers
    .find({ escalation: 'failed' })
    .sort({ expiresAt: 1, _id: 1 })
    .limit(limit)
    .batchSize(limit)
    .lean<TimerDoc[]>()
    .exec();
  return docs.map(toTimer);
}

/**
 * CAS escalation failed → pending, count reset, stamped with who retried it and when; the audit
 * line follows under an id derived from that stamp. A repeat that finds it retried (no longer
 * failed, stamped) writes that line again: one lost between the two writes is filled in.
 */
export async function retryEscalation(ctx: Ctx, timerId: string, actor: string): Promise<Timer | null> {
  const now = await ctx.now();
  const d = await casOne(ctx, ctx.m.timers, {
    // an anonymised dead letter (retention) has no place left to escalate with
    filter: { _id: timerId, escalation: 'failed', redactedAt: { $exists: false } },
    update: (op) => ({
      $set: { escalation: 'pending', lastOp: op, retriedBy: actor, retriedAt: now },
      $unset: { escalationAttempts: 1 },
      $currentDate: { updatedAt: true },
    }),
  });
  const cur = d ?? (await ctx.m.timers.findById(timerId).lean<TimerDoc>().exec());
  if (cur?.retriedBy && cur.retriedAt && cur.escalation !== 'failed')
    await writeAudit(ctx, [retryLine(toTimer(cur), cur.retriedBy, cur.retriedAt)]);
  return d ? toTimer(d) : null;
}

/** Live timers past the deadline plus the grace: two index-backed reads on {status, expiresAt}. */
export async function overdue(ctx: Ctx, graceMs = 0): Promise<{ count: number; oldest?: Date }> {
  const now = await ctx.now();
  const due = { status: live, expiresAt: { $lte: new Date(now.getTime() - graceMs) } };
  const [count, oldest] = await Promise.all([
    ctx.m.timers.countDocuments(due).readConcern('majority').exec(),
    ctx.m.timers.findOne(due, { expiresAt: 1 }).sort({ expiresAt: 1 }).readConcern('majority').lean<Pick<TimerDoc, 'expiresAt'>>().exec(),
  ]);
  return oldest ? { count, oldest: oldest.expiresAt } : { count };
}
