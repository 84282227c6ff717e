/**
 * Embedded store: one SQLite file (better-sqlite3, WAL) that several processes on one
 * host may share. Every transition is one `UPDATE … WHERE <allowed states> RETURNING *`;
 * every write runs in an IMMEDIATE transaction taken by the WriteGate (./write-gate.ts), so
 * writers queue on the file lock without blocking their event loops.
 * The SQL lives in ./statements.ts. Every operation runs behind guard(): a file held
 * locked past the busy timeout or a closed store is `Unavailable` (503), as on MongoDB.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Contact } from '../../domain/contact.js';
import type { Delivery, DeliveryStatus } from '../../domain/delivery.js';
import type { Incident, IncidentStatus } from '../../domain/incident.js';
import type { AuditEntry, IncidentNote, RetentionCounts } from '../../domain/moderation.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import type { StoredFix } from '../../domain/location.js';
import { ALL_SHARDS, sweepSlot, type SweepShard } from '../../domain/sweep-shard.js';
import type { Timer, TimerStatus } from '../../domain/timer.js';
import type {
  ArmResult,
  ChangedSince,
  DeliveryOutcome,
  IdempotencyClaim,
  KeyedCommandResult,
  NewDelivery,
  NewTimer,
  StateCounts,
  Store,
} from '../port.js';
import type { AttemptRecord, EscalationItem, EscalationResult } from '../port-batch.js';
import * as batch from './batch.js';
import type { AuditPosition, NewNote } from '../port-moderation.js';
import { unavailableOr } from './errors.js';
import { SqliteLocation } from './location.js';
import { migrate } from './migrate.js';
import { prepareBatch } from './statements-batch.js';
import { SqliteModeration } from './moderation.js';
import { prepareAll, type Statements } from './statements.js';
import { SqliteSafety } from './safety.js';
import { WriteGate, type WriteGateStats } from './write-gate.js';
import type { NewPanic, NotificationQuery, PanicKey, PanicResult, Warned } from '../port-safety.js';
import type { NewNotification, Notification } from '../../domain/notification.js';
import type { WarningWindow } from '../../domain/warning.js';
import {
  incidentInsertParams,
  toContact,
  toDelivery,
  toIncident,
  toTimer,
  type ContactRow,
  type DeliveryRow,
  type IncidentRow,
  type TimerRow,
} from './rows.js';

export interface SqliteOptions {
  /** path of the database file; created with its folder when missing */
  file: string;
  /** the store's clock; defaults to the system clock (shared by every process on the host) */
  clock?: () => number;
  /**
   * how long a writer waits for another process's write lock (ms), default 2500. The store's
   * operations wait in the WriteGate, off the event loop; SQLite's busy handler (which blocks
   * it) is left to the rare read that finds the file locked, and to recovery.
   */
  busyTimeoutMs?: number;
  /** how long after its stamp a write may still be committing (ms), default 1000; list cursors lag by it */
  changeLagMs?: number;
  /**
   * `full` (default): every commit is fsynced before it returns, so an acknowledged write
   * survives a power loss; the fsync blocks the event loop. `normal`: in WAL mode the log is
   * fsynced at checkpoints only: never corrupt, nothing lost when the process dies, but a
   * power loss or OS crash may lose the last commits (docs/performance-notes.md).
   */
  synchronous?: 'full' | 'normal';
}

const UNGUARDED = new Set(['constructor', 'close', 'ping', 'guard', 'guardOperations', 'writeGateStats']);
/**
 * The operations that write: each takes the write lock through the WriteGate (./write-gate.ts),
 * which waits for another process's lock without blocking the event loop. The others only
 * read (in WAL mode a reader never waits for the writer) and run as they are. A new method
 * must be listed in one of the two (test/integration/sqlite-write-gate.test.ts checks it); one
 * missing from WRITES still works, waiting in SQLite's busy handler as before.
 */
export const SQLITE_WRITES: ReadonlySet<string> = new Set([
  'armTimer',
  'extendTimer',
  'resolveTimer',
  'extendTimerKeyed',
  'resolveTimerKeyed',
  'extendNow', // the private helpers behind the four above
  'resolveNow',
  'keyed',
  'claimDueTimers',
  'markEscalated',
  'recordEscalationFailure',
  'retryEscalation',
  'openIncident',
  'transitionIncident',
  'markAllClearDone',
  'addDeliveries',
  'claimDeliveries',
  'recordAttempt',
  'supersedePendingSos',
  'supersedeClaimed',
  'applyReceipt',
  'resendDelivery',
  'cancelPendingDeliveries',
  'addIncidentNote',
  'redactClosed',
  'replaceContacts',
  'escalateBatch',
  'recordAttempts',
  'addFixes',
  'raisePanic',
  'markPanicTexted',
  'claimWarnings',
  'addNotification',
  'addNotifications',
  'markNotificationRead',
  'markAllNotificationsRead',
]);
export const SQLITE_READS: ReadonlySet<string> = new Set([
  'now',
  'changeLagMs',
  'getTimer',
  'listTimers',
  'pendingEscalations',
  'failedEscalations',
  'overdue',
  'maxRecordedFence',
  'countPendingEscalations',
  'stateCounts',
  'getIncident',
  'incidentForTimer',
  'listIncidents',
  'pendingAllClears',
  'deliveriesFor',
  'getDelivery',
  'countDeliveriesSince',
  'deliveryBacklog',
  'notesFor',
  'listAudit',
  'getContacts',
  'incidentsForTimers',
  'contactsOf',
  'countDeliveriesSinceMany',
  'nextDeadline',
  'listFixes',
  'lastFix',
  'pendingPanicTexts',
  'listNotifications',
]);
/** every prototype method the store puts behind guard() (for the test that each is a read or a write) */
export function sqliteOperations(): string[] {
  return Object.getOwnPropertyNames(SqliteStore.prototype).filter(
    (n) => !UNGUARDED.has(n) && typeof Object.getOwnPropertyDescriptor(SqliteStore.prototype, n)?.value === 'function',
  );
}

export class SqliteStore implements Store {
  private readonly db: Database.Database;
  private readonly st: Statements;
  private readonly batch: batch.BatchCtx;
  private readonly safety: SqliteSafety;
  private readonly mod: SqliteModeration;
  private readonly clock: () => number;
  private readonly lagMs: number;
  private readonly location: SqliteLocation;
  private readonly gate: WriteGate;
  private closed = false;

  private constructor(opts: SqliteOptions) {
    mkdirSync(dirname(opts.file), { recursive: true });
    // `timeout` is SQLite's busy timeout: how long a writer waits for another process's lock
    this.db = new Database(opts.file, { timeout: opts.busyTimeoutMs ?? 2500 });
    this.gate = new WriteGate(this.db, opts.busyTimeoutMs ?? 2500);
    this.clock = opts.clock ?? Date.now;
    this.lagMs = opts.changeLagMs ?? 1000;
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(opts.synchronous === 'normal' ? 'synchronous = NORMAL' : 'synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
    // statement journals (the undo of one statement or savepoint inside a transaction; never
    // needed after a crash: the WAL is the durable part) in memory, not spilled to a temp file
    // once past 64 KiB: a 10,000 burst's group commits wrote them at every group (docs/performance-notes.md)
    this.db.pragma('temp_store = MEMORY');
    migrate(this.db);
    // read by statements while they run, i.e. once the write lock is held (see ./statements.ts)
    this.db.function('store_now', { deterministic: false }, () => this.clock());
    this.st = prepareAll(this.db);
    this.batch = { db: this.db, st: this.st, bst: prepareBatch(this.db), clock: this.clock };
    this.location = new SqliteLocation(this.db, this.clock);
    this.safety = new SqliteSafety(this.db, this.clock);
    this.mod = new SqliteModeration(this.db, this.clock);
    this.guardOperations();
  }

  /**
   * Put every method (the port's operations, those added later too) behind guard(). `close`
   * and `ping` stay as they are: closing twice is fine and readiness answers false, not 503.
   */
  private guardOperations(): void {
    for (const name of Object.getOwnPropertyNames(SqliteStore.prototype)) {
      const fn: unknown = Object.getOwnPropertyDescriptor(SqliteStore.prototype, name)?.value;
      if (UNGUARDED.has(name) || typeof fn !== 'function') continue;
      const method = fn as (...args: unknown[]) => unknown;
      const call = SQLITE_WRITES.has(name)
        ? (args: unknown[]) => () => this.gate.run(() => method.apply(this, args))
        : (args: unknown[]) => () => method.apply(this, args);
      // an ordinary own property (as a class field would be), so proxies and spies over the store still work
      Object.defineProperty(this, name, {
        value: (...args: unknown[]) => this.guard(name, call(args)),
        writable: true,
        configurable: true,
        enumerable: false,
      });
    }
  }

  /**
   * A busy or locked file and a closed store become `Unavailable` (503 + Retry-After); the
   * rest propagates. A promise is translated when it rejects; a synchronous helper stays synchronous.
   */
  private guard(op: string, call: () => unknown): unknown {
    let out: unknown;
    try {
      out = call();
    } catch (err) {
      throw unavailableOr(op, err);
    }
    if (!(out instanceof Promise)) return out;
    return out.catch((err: unknown) => {
      throw unavailableOr(op, err);
    });
  }

  static async open(opts: SqliteOptions): Promise<SqliteStore> {
    return new SqliteStore(opts);
  }

  async now(): Promise<Date> {
    return new Date(this.clock());
  }

  async ping(): Promise<boolean> {
    if (this.closed) return false;
    return this.st.ping.get() !== undefined;
  }

  /** how many writes found the lock free, waited for another process, or gave up (since the store opened) */
  writeGateStats(): WriteGateStats {
    return { ...this.gate.stats };
  }

  changeLagMs(): number {
    return this.lagMs;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.gate.close(new TypeError('The database connection is not open'));
    this.db.close();
  }

  // ── timers ──────────────────────────────────────────────────────────────────

  async armTimer(t: NewTimer, idem?: IdempotencyClaim): Promise<ArmResult> {
    const now = this.clock();
    const run = this.db.transaction((): ArmResult => {
      if (idem) {
        const prior = this.st.idempotencyGet.get(t.userId, idem.key) as { fingerprint: string; timer_id: string } | undefined;
        if (prior) {
          if (prior.fingerprint !== idem.fingerprint) return { kind: 'idempotency_mismatch' };
          const row = this.st.timerById.get(prior.timer_id) as TimerRow;
          return { kind: 'replayed', timer: toTimer(row) };
        }
      }
      const live = this.st.liveTimerOfUser.get(t.userId) as TimerRow | undefined;
      if (live) return { kind: 'live_timer_exists', timer: toTimer(live) };
      const row = this.st.timerInsert.get({
        id: t.id,
        userId: t.userId,
        startedAt: t.startedAt.getTime(),
        expiresAt: t.expiresAt.getTime(),
        now,
        locationName: t.locationName ?? null,
        lat: t.location?.lat ?? null,
        lng: t.location?.lng ?? null,
        displayName: t.displayName ?? null,
        traceparent: t.traceparent ?? null,
        meeting: t.meeting ? JSON.stringify(t.meeting) : null,
        slot: sweepSlot(t.id),
      }) as TimerRow;
      if (idem) this.st.idempotencyInsert.run(t.userId, idem.key, idem.fingerprint, t.id, now);
      return { kind: 'created', timer: toTimer(row) };
    });
    return run.immediate();
  }

  async getTimer(id: string, userId?: string): Promise<Timer | null> {
    const row = (userId === undefined ? this.st.timerById.get(id) : this.st.timerByIdAndUser.get(id, userId)) as TimerRow | undefined;
    return row ? toTimer(row) : null;
  }

  async listTimers(userId: string, filter: { status?: TimerStatus } & ChangedSince = {}): Promise<Timer[]> {
    const { status, since } = filter;
    const st = since
      ? status
        ? this.st.timersSinceByStatus
        : this.st.timersSince
      : status
        ? this.st.timersNewestByStatus
        : this.st.timersNewest;
    const rows = st.all({
      userId,
      status: status ?? null,
      since: since?.getTime() ?? null,
      sinceId: filter.sinceId ?? null,
      limit: filter.limit ?? PAGE_SIZE,
    }) as TimerRow[];
    return rows.map(toTimer);
  }

  async extendTimer(
    id: string,
    userId: string,
    seconds: number,
    caps: { maxExtensions: number; maxTotalSeconds: number },
  ): Promise<Timer | null> {
    return this.extendNow(id, userId, seconds, caps);
  }

  async resolveTimer(id: string, userId: string, to: 'safe' | 'cancelled'): Promise<Timer | null> {
    return this.resolveNow(id, userId, to);
  }

  private extendNow(id: string, userId: string, seconds: number, caps: { maxExtensions: number; maxTotalSeconds: number }): Timer | null {
    const row = this.st.timerExtend.get({
      id,
      userId,
      ms: seconds * 1000,
      now: this.clock(),
      maxExtensions: caps.maxExtensions,
      maxTotalMs: caps.maxTotalSeconds * 1000,
    }) as TimerRow | undefined;
    return row ? toTimer(row) : null;
  }

  private resolveNow(id: string, userId: string, to: 'safe' | 'cancelled'): Timer | null {
    const row = this.st.timerResolve.get({ id, userId, to, now: this.clock() }) as TimerRow | undefined;
    return row ? toTimer(row) : null;
  }

  async extendTimerKeyed(
    id: string,
    userId: string,
    seconds: number,
    caps: { maxExtensions: number; maxTotalSeconds: number },
    idem: IdempotencyClaim,
  ): Promise<KeyedCommandResult> {
    return this.keyed(userId, idem, () => this.extendNow(id, userId, seconds, caps));
  }

  async resolveTimerKeyed(id: string, userId: string, to: 'safe' | 'cancelled', idem: IdempotencyClaim): Promise<KeyedCommandResult> {
    return this.keyed(userId, idem, () => this.resolveNow(id, userId, to));
  }

  /**
   * One IMMEDIATE transaction: look the key up (arming and commands share the person's key
   * space), run the CAS, record the key with it. A retry racing the first request queues on
   * the write lock and then finds the key.
   */
  private keyed(userId: string, idem: IdempotencyClaim, cas: () => Timer | null): Promise<KeyedCommandResult> {
    const run = this.db.transaction((): KeyedCommandResult => {
      const prior = this.st.idempotencyGet.get(userId, idem.key) as { fingerprint: string; timer_id: string } | undefined;
      if (prior) {
        if (prior.fingerprint !== idem.fingerprint) return { kind: 'idempotency_mismatch' };
        return { kind: 'replayed', timer: toTimer(this.st.timerById.get(prior.timer_id) as TimerRow) };
      }
      const timer = cas();
      if (!timer) return { kind: 'refused' };
      this.st.idempotencyInsert.run(userId, idem.key, idem.fingerprint, timer.id, this.clock());
      return { kind: 'applied', timer };
    });
    return Promise.resolve(run.immediate());
  }

  async claimDueTimers(limit: number, fence: number, graceMs = 0, shard: SweepShard = ALL_SHARDS): Promise<Timer[]> {
    const now = this.clock();
    const rows = this.st.timersClaimDue.all({ now, due: now - graceMs, fence, limit, shards: shard.of, shard: shard.index }) as TimerRow[];
    return rows.map(toTimer).sort((a, b) => a.expiresAt.getTime() - b.expiresAt.getTime());
  }

  async pendingEscalations(limit: number, shard: SweepShard = ALL_SHARDS): Promise<Timer[]> {
    const rows = this.st.timersPendingEscalation.all({ limit, shards: shard.of, shard: shard.index }) as TimerRow[];
    return rows.map(toTimer);
  }

  async markEscalated(timerId: string, incidentId: string): Promise<boolean> {
    return this.st.timerMarkEscalated.run(incidentId, timerId).changes === 1;
  }

  async recordEscalationFailure(timerId: string, error: string, maxAttempts: number): Promise<Timer | null> {
    const row = this.st.timerEscalationFailed.get({ id: timerId, error, max: maxAttempts }) as TimerRow | undefined;
    return row ? toTimer(row) : null;
  }

  async failedEscalations(limit: number): Promise<Timer[]> {
    return (this.st.timersEscalationFailed.all(limit) as TimerRow[]).map(toTimer);
  }

  async retryEscalation(timerId: string): Promise<Timer | null> {
    const row = this.st.timerEscalationRetry.get(timerId) as TimerRow | undefined;
    return row ? toTimer(row) : null;
  }

  async overdue(): Promise<{ count: number; oldest?: Date }> {
    const r = this.st.timersOverdue.get(this.clock()) as { n: number; oldest: number | null };
    return r.oldest === null ? { count: r.n } : { count: r.n, oldest: new Date(r.oldest) };
  }

  async maxRecordedFence(): Promise<number> {
    return (this.st.maxRecordedFence.get() as { f: number }).f;
  }

  async countPendingEscalations(): Promise<number> {
    return (this.st.timersPendingEscalationCount.get() as { n: number }).n;
  }

  async stateCounts(): Promise<StateCounts> {
    const counts = { timers: { active: 0, extended: 0 }, incidents: { active: 0, acknowledged: 0 } };
    for (const r of this.st.timersLiveByStatus.all() as { status: 'active' | 'extended'; n: number }[]) counts.timers[r.status] = r.n;
    for (const r of this.st.incidentsOpenByStatus.all() as { status: 'active' | 'acknowledged'; n: number }[])
      counts.incidents[r.status] = r.n;
    return counts;
  }

  // ── incidents ───────────────────────────────────────────────────────────────

  async openIncident(timer: Timer, fence: number, id: string): Promise<{ incident: Incident; created: boolean }> {
    const now = this.clock();
    const inserted = this.st.incidentInsert.get(incidentInsertParams(timer, fence, id, now)) as IncidentRow | undefined;
    if (inserted) return { incident: toIncident(inserted), created: true };
    const existing = this.st.incidentByTimer.get(timer.id) as IncidentRow;
    return { incident: toIncident(existing), created: false };
  }

  async getIncident(id: string): Promise<Incident | null> {
    const row = this.st.incidentById.get(id) as IncidentRow | undefined;
    return row ? toIncident(row) : null;
  }

  async incidentForTimer(timerId: string): Promise<Incident | null> {
    const row = this.st.incidentByTimer.get(timerId) as IncidentRow | undefined;
    return row ? toIncident(row) : null;
  }

  async listIncidents(filter: { status?: IncidentStatus } & ChangedSince = {}): Promise<Incident[]> {
    const { status, since } = filter;
    const st = since
      ? status
        ? this.st.incidentsSinceByStatus
        : this.st.incidentsSince
      : status
        ? this.st.incidentsOldestByStatus
        : this.st.incidentsOldest;
    const rows = st.all({
      status: status ?? null,
      since: since?.getTime() ?? null,
      sinceId: filter.sinceId ?? null,
      limit: filter.limit ?? PAGE_SIZE,
    }) as IncidentRow[];
    return rows.map(toIncident);
  }

  async transitionIncident(id: string, from: readonly IncidentStatus[], to: IncidentStatus, by: string): Promise<Incident | null> {
    const st =
      to === 'acknowledged' ? this.st.incidentAcknowledge : to === 'false_alarm' ? this.st.incidentFalseAlarm : this.st.incidentResolve;
    const row = st.get({ id, to, by, from: JSON.stringify(from), now: this.clock() }) as IncidentRow | undefined;
    return row ? toIncident(row) : null;
  }

  async pendingAllClears(limit: number): Promise<Incident[]> {
    return (this.st.incidentsAllClearPending.all(limit) as IncidentRow[]).map(toIncident);
  }

  async markAllClearDone(incidentId: string): Promise<boolean> {
    return this.st.incidentAllClearDone.run(incidentId).changes === 1;
  }

  // ── deliveries ──────────────────────────────────────────────────────────────

  async addDeliveries(incident: Incident, list: NewDelivery[]): Promise<Delivery[]> {
    const now = this.clock();
    this.db
      .transaction(() => {
        for (const d of list)
          this.st.deliveryInsert.run({ ...d, incidentId: incident.id, userId: incident.userId, now, traceparent: d.traceparent ?? null });
      })
      .immediate();
    const rows = this.st.deliveriesOfIncident.all(incident.id) as DeliveryRow[];
    return rows.map(toDelivery);
  }

  async deliveriesFor(incidentIds: string[]): Promise<Delivery[]> {
    if (incidentIds.length === 0) return [];
    const out: Delivery[] = [];
    // page by page, as before: the order is by (created_at, key) within each page of ids
    for (let i = 0; i < incidentIds.length; i += PAGE_SIZE) {
      const rows = this.st.deliveriesOfIncidents.all(JSON.stringify(incidentIds.slice(i, i + PAGE_SIZE))) as DeliveryRow[];
      out.push(...rows.map(toDelivery));
    }
    return out;
  }

  async getDelivery(key: string): Promise<Delivery | null> {
    const row = this.st.deliveryByKey.get(key) as DeliveryRow | undefined;
    return row ? toDelivery(row) : null;
  }

  async claimDeliveries(limit: number, leaseMs: number): Promise<Delivery[]> {
    const rows = this.st.deliveriesClaim.all({ now: this.clock(), leaseMs, limit }) as DeliveryRow[];
    return rows.map(toDelivery);
  }

  async recordAttempt(key: string, attempt: number, o: DeliveryOutcome): Promise<Delivery | null> {
    const row = this.st.deliveryRecordAttempt.get({
      key,
      attempt,
      status: o.status,
      carrier: o.carrier,
      providerMessageId: o.providerMessageId ?? null,
      error: o.error ?? null,
      next: o.nextAttemptAt?.getTime() ?? null,
      maybeAccepted: o.maybeAccepted === true ? 1 : 0,
      now: this.clock(),
    }) as DeliveryRow | undefined;
    return row ? toDelivery(row) : null;
  }

  async supersedePendingSos(incidentId: string): Promise<Delivery[]> {
    return (this.st.deliveriesSupersedeSos.all({ incidentId, now: this.clock() }) as DeliveryRow[]).map(toDelivery);
  }

  async supersedeClaimed(key: string, attempt: number, reason: string): Promise<Delivery | null> {
    const row = this.st.deliverySupersedeClaimed.get({ key, attempt, reason, now: this.clock() }) as DeliveryRow | undefined;
    return row ? toDelivery(row) : null;
  }

  async applyReceipt(
    providerMessageId: string,
    to: 'sent' | 'delivered' | 'failed',
    from: readonly DeliveryStatus[],
  ): Promise<Delivery | null> {
    if (from.length === 0) return null;
    const row = this.st.deliveryApplyReceipt.get({ pid: providerMessageId, to, from: JSON.stringify(from), now: this.clock() }) as
      DeliveryRow | undefined;
    return row ? toDelivery(row) : null;
  }

  async countDeliveriesSince(userId: string, since: Date): Promise<number> {
    return (this.st.deliveriesCountSince.get(userId, since.getTime()) as { n: number }).n;
  }

  async deliveryBacklog(): Promise<{ pending: number; oldestDue?: Date; dead: number }> {
    const p = this.st.deliveriesOpen.get() as { n: number; oldest: number | null };
    const d = this.st.deliveriesDead.get() as { n: number };
    return p.oldest === null ? { pending: p.n, dead: d.n } : { pending: p.n, oldestDue: new Date(p.oldest), dead: d.n };
  }

  // ── moderator actions and retention (./moderation.ts) ────────────────────────

  // methods, not fields: guardOperations() puts the prototype's methods behind guard()
  resendDelivery(key: string, actor: string): Promise<Delivery | null> {
    return this.mod.resendDelivery(key, actor);
  }
  cancelPendingDeliveries(incidentId: string, actor: string): Promise<Delivery[]> {
    return this.mod.cancelPendingDeliveries(incidentId, actor);
  }
  addIncidentNote(note: NewNote): Promise<{ note: IncidentNote; created: boolean }> {
    return this.mod.addIncidentNote(note);
  }
  notesFor(incidentIds: string[]): Promise<IncidentNote[]> {
    return this.mod.notesFor(incidentIds);
  }
  listAudit(page: { before?: AuditPosition; limit: number }): Promise<AuditEntry[]> {
    return this.mod.listAudit(page);
  }
  redactClosed(before: Date, limit: number): Promise<RetentionCounts> {
    return this.mod.redactClosed(before, limit);
  }

  // ── contacts ────────────────────────────────────────────────────────────────

  async getContacts(userId: string): Promise<Contact[]> {
    const rows = this.st.contactsOfUser.all(userId) as ContactRow[];
    return rows.map(toContact);
  }

  async replaceContacts(userId: string, contacts: Contact[]): Promise<Contact[]> {
    this.db
      .transaction(() => {
        this.st.contactsDelete.run(userId);
        contacts.forEach((c, i) => this.st.contactInsert.run(userId, i, c.id, c.name, c.phone));
      })
      .immediate();
    return this.getContacts(userId);
  }

  // ── group commit (./batch.ts) ───────────────────────────────────────────────

  async escalateBatch(items: EscalationItem[]): Promise<EscalationResult[]> {
    return batch.escalateBatch(this.batch, items);
  }

  async incidentsForTimers(timerIds: string[]): Promise<Incident[]> {
    return batch.incidentsForTimers(this.batch, timerIds);
  }

  async contactsOf(userIds: string[]): Promise<Map<string, Contact[]>> {
    return batch.contactsOf(this.batch, userIds);
  }

  async countDeliveriesSinceMany(userIds: string[], since: Date): Promise<Map<string, number>> {
    return batch.countDeliveriesSinceMany(this.batch, userIds, since);
  }

  async nextDeadline(): Promise<Date | null> {
    return batch.nextDeadline(this.batch);
  }

  async recordAttempts(list: AttemptRecord[]): Promise<(Delivery | null)[]> {
    return batch.recordAttempts(this.batch, list);
  }

  // ── location trail (./location.ts) ──────────────────────────────────────────

  async addFixes(fixes: StoredFix[]): Promise<number> {
    return this.location.addFixes(fixes);
  }

  async listFixes(timerId: string, limit: number): Promise<StoredFix[]> {
    return this.location.listFixes(timerId, limit);
  }

  async lastFix(timerId: string): Promise<StoredFix | null> {
    return this.location.lastFix(timerId);
  }

  // ── safety (./safety.ts) ────────────────────────────────────────────────────

  async raisePanic(p: NewPanic, idem?: PanicKey): Promise<PanicResult> {
    return this.safety.raisePanic(p, idem);
  }

  async pendingPanicTexts(limit: number): Promise<Incident[]> {
    return this.safety.pendingPanicTexts(limit);
  }

  async markPanicTexted(incidentId: string): Promise<boolean> {
    return this.safety.markPanicTexted(incidentId);
  }

  async claimWarnings(limit: number, window: WarningWindow): Promise<Warned[]> {
    return this.safety.claimWarnings(limit, window);
  }

  async addNotification(n: NewNotification): Promise<{ notification: Notification; created: boolean }> {
    return this.safety.addNotification(n);
  }

  async addNotifications(list: NewNotification[]): Promise<{ notification: Notification; created: boolean }[]> {
    return this.safety.addNotifications(list);
  }

  async listNotifications(userId: string, q?: NotificationQuery): Promise<Notification[]> {
    return this.safety.listNotifications(userId, q);
  }

  async markNotificationRead(userId: string, id: string): Promise<Notification | null> {
    return this.safety.markNotificationRead(userId, id);
  }

  async markAllNotificationsRead(userId: string): Promise<number> {
    return this.safety.markAllNotificationsRead(userId);
  }
}
