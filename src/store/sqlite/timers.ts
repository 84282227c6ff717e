/**
 * Timer operations of the SQLite store (SQL in ./timers-statements.ts). Every transition is one
 * `UPDATE … WHERE <allowed states> RETURNING *`; arming and keyed commands look their
 * Idempotency-Key up and record it in the same IMMEDIATE transaction.
 */
import { retryLine } from '../../domain/moderation.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import { ALL_SHARDS, type SweepShard } from '../../domain/sweep-shard.js';
import type { Timer, TimerStatus } from '../../domain/timer.js';
import type { ArmResult, ChangedSince, IdempotencyClaim, KeyedCommandResult, NewTimer, ResolveOptions, StateCounts } from '../port.js';
import { read, write, type Ctx } from './ctx.js';
import { auditRow } from './moderation.js';
import { timerInsertParams, toTimer, type TimerRow } from './rows.js';

type Caps = { maxExtensions: number; maxTotalSeconds: number };

const timerOrNull = (row: unknown): Timer | null => (row ? toTimer(row as TimerRow) : null);

/** The person's prior use of an Idempotency-Key (arming and commands share the person's key space). */
const priorKey = (c: Ctx, userId: string, key: string) =>
  c.st.idempotencyGet.get(userId, key) as { fingerprint: string; timer_id: string } | undefined;

export const armTimer = write((c, t: NewTimer, idem?: IdempotencyClaim): ArmResult => {
  const now = c.clock();
  const run = c.db.transaction((): ArmResult => {
    if (idem) {
      const prior = priorKey(c, t.userId, idem.key);
      if (prior) {
        if (prior.fingerprint !== idem.fingerprint) return { kind: 'idempotency_mismatch' };
        const row = c.st.timerById.get(prior.timer_id) as TimerRow;
        return { kind: 'replayed', timer: toTimer(row) };
      }
    }
    const live = c.st.liveTimerOfUser.get(t.userId) as TimerRow | undefined;
    if (live) return { kind: 'live_timer_exists', timer: toTimer(live) };
    const row = c.st.timerInsert.get(timerInsertParams(t, now)) as TimerRow;
    if (idem) c.st.idempotencyInsert.run(t.userId, idem.key, idem.fingerprint, t.id, now);
    return { kind: 'created', timer: toTimer(row) };
  });
  return run.immediate();
});

export const getTimer = read((c, id: string, userId?: string): Timer | null =>
  timerOrNull(userId === undefined ? c.st.timerById.get(id) : c.st.timerByIdAndUser.get(id, userId)),
);

export const listTimers = read((c, userId: string, filter: { status?: TimerStatus } & ChangedSince = {}): Timer[] => {
  const { status, since } = filter;
  const st = since ? (status ? c.st.timersSinceByStatus : c.st.timersSince) : status ? c.st.timersNewestByStatus : c.st.timersNewest;
  const rows = st.all({
    userId,
    status: status ?? null,
    since: since?.getTime() ?? null,
    sinceId: filter.sinceId ?? null,
    limit: filter.limit ?? PAGE_SIZE,
  }) as TimerRow[];
  return rows.map(toTimer);
});

/** The extension CAS (also run under a key by extendTimerKeyed). */
function extendCas(c: Ctx, id: string, userId: string, seconds: number, caps: Caps): Timer | null {
  return timerOrNull(
    c.st.timerExtend.get({
      id,
      userId,
      ms: seconds * 1000,
      now: c.clock(),
      maxExtensions: caps.maxExtensions,
      maxTotalMs: caps.maxTotalSeconds * 1000,
    }),
  );
}

/** The check-in / cancel CAS (also run under a key by resolveTimerKeyed); under duress it records the owed SOS. */
function resolveCas(c: Ctx, id: string, userId: string, to: 'safe' | 'cancelled', o: ResolveOptions = {}): Timer | null {
  return timerOrNull(c.st.timerResolve.get({ id, userId, to, now: c.clock(), duress: o.duress ? 1 : null }));
}

/**
 * One IMMEDIATE transaction: look the key up, run the CAS, record the key with it. A retry
 * racing the first request queues on the write lock and then finds the key.
 */
function keyed(c: Ctx, userId: string, idem: IdempotencyClaim, cas: () => Timer | null): KeyedCommandResult {
  const run = c.db.transaction((): KeyedCommandResult => {
    const prior = priorKey(c, userId, idem.key);
    if (prior) {
      if (prior.fingerprint !== idem.fingerprint) return { kind: 'idempotency_mismatch' };
      return { kind: 'replayed', timer: toTimer(c.st.timerById.get(prior.timer_id) as TimerRow) };
    }
    const timer = cas();
    if (!timer) return { kind: 'refused' };
    c.st.idempotencyInsert.run(userId, idem.key, idem.fingerprint, timer.id, c.clock());
    return { kind: 'applied', timer };
  });
  return run.immediate();
}

export const extendTimer = write(extendCas);

export const resolveTimer = write(resolveCas);

export const extendTimerKeyed = write(
  (c, id: string, userId: string, seconds: number, caps: Caps, idem: IdempotencyClaim): KeyedCommandResult =>
    keyed(c, userId, idem, () => extendCas(c, id, userId, seconds, caps)),
);

export const resolveTimerKeyed = write(
  (c, id: string, userId: string, to: 'safe' | 'cancelled', idem: IdempotencyClaim, o?: ResolveOptions): KeyedCommandResult =>
    keyed(c, userId, idem, () => resolveCas(c, id, userId, to, o)),
);

export const claimDueTimers = write((c, limit: number, fence: number, graceMs: number = 0, shard: SweepShard = ALL_SHARDS): Timer[] => {
  const now = c.clock();
  const rows = c.st.timersClaimDue.all({ now, due: now - graceMs, fence, limit, shards: shard.of, shard: shard.index }) as TimerRow[];
  return rows.map(toTimer).sort((a, b) => a.expiresAt.getTime() - b.expiresAt.getTime());
});

export const pendingEscalations = read((c, limit: number, shard: SweepShard = ALL_SHARDS): Timer[] => {
  const rows = c.st.timersPendingEscalation.all({ limit, shards: shard.of, shard: shard.index }) as TimerRow[];
  return rows.map(toTimer);
});

/** pending → done with the incident it opened (also a step of the group commit: ./batch.ts). */
export function markEscalatedRow(c: Ctx, timerId: string, incidentId: string): boolean {
  return c.st.timerMarkEscalated.run(incidentId, timerId).changes === 1;
}

export const markEscalated = write(markEscalatedRow);

export const recordEscalationFailure = write((c, timerId: string, error: string, maxAttempts: number): Timer | null =>
  timerOrNull(c.st.timerEscalationFailed.get({ id: timerId, error, max: maxAttempts })),
);

export const failedEscalations = read((c, limit: number): Timer[] => (c.st.timersEscalationFailed.all(limit) as TimerRow[]).map(toTimer));

/** The retry and the moderator's audit line, one transaction. */
export const retryEscalation = write((c, timerId: string, actor: string): Timer | null => {
  const run = c.db.transaction((): Timer | null => {
    const now = c.clock();
    const t = timerOrNull(c.st.timerEscalationRetry.get(timerId));
    if (t) auditRow(c, retryLine(t, actor, new Date(now)), now);
    return t;
  });
  return run.immediate();
});

export const overdue = read((c, graceMs: number = 0): { count: number; oldest?: Date } => {
  const r = c.st.timersOverdue.get({ due: c.clock() - graceMs }) as { n: number; oldest: number | null };
  return r.oldest === null ? { count: r.n } : { count: r.n, oldest: new Date(r.oldest) };
});

export const maxRecordedFence = read((c): number => (c.st.maxRecordedFence.get() as { f: number }).f);

export const oldestUnacknowledged = read((c): Date | undefined => {
  const r = c.st.incidentOldestUnacknowledged.get() as { oldest: number | null };
  return r.oldest === null ? undefined : new Date(r.oldest);
});

export const countPendingEscalations = read((c): number => (c.st.timersPendingEscalationCount.get() as { n: number }).n);

export const stateCounts = read((c): StateCounts => {
  const counts = { timers: { active: 0, extended: 0 }, incidents: { active: 0, acknowledged: 0 } };
  for (const r of c.st.timersLiveByStatus.all() as { status: 'active' | 'extended'; n: number }[]) counts.timers[r.status] = r.n;
  for (const r of c.st.incidentsOpenByStatus.all() as { status: 'active' | 'acknowledged'; n: number }[]) counts.incidents[r.status] = r.n;
  return counts;
});
