/**
 * Embedded store: one SQLite file (better-sqlite3, WAL) that several processes on one
 * host may share. The operations live in one module per area (./timers.ts, ./incidents.ts,
 * ./deliveries.ts, ./contacts.ts, ./contact-ids.ts, ./batch.ts, ./safety.ts, ./moderation.ts, ./location.ts, ./tokens.ts),
 * each declared a read or a write where it is defined (./ctx.ts); their SQL beside them
 * (./timers-statements.ts, …). This file owns the connection, the clock and the WriteGate
 * (./write-gate.ts): every write runs in an IMMEDIATE transaction taken by it, so writers queue
 * on the file lock without blocking their event loops. Every operation runs behind op(): a
 * file held locked past the busy timeout or a closed store is `Unavailable` (503), as on MongoDB.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Store } from '../port.js';
import * as batch from './batch.js';
import * as contactIds from './contact-ids.js';
import * as contacts from './contacts.js';
import type { Access, Ctx, Operation } from './ctx.js';
import * as deliveries from './deliveries.js';
import { unavailableOr } from './errors.js';
import * as incidents from './incidents.js';
import * as location from './location.js';
import { migrate } from './migrate.js';
import * as moderation from './moderation.js';
import * as personal from './personal.js';
import * as safety from './safety.js';
import { prepareAll } from './statements.js';
import * as timers from './timers.js';
import * as tokens from './tokens.js';
import * as duress from './duress.js';
import * as replies from './replies.js';
import { WriteGate, type WriteGateStats } from './write-gate.js';

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
   * power loss or OS crash may lose the last commits (docs/architecture.md, "Why a burst stays on time").
   */
  synchronous?: 'full' | 'normal';
}

/** The store's methods that are not operations of an area module: its life cycle and plumbing. */
const SQLITE_LIFECYCLE: readonly string[] = ['constructor', 'now', 'ping', 'writeGateStats', 'changeLagMs', 'close', 'op'];

/**
 * Every operation of `store` with its declared access, and the functions on it that are neither
 * an operation nor in SQLITE_LIFECYCLE (for the test that each operation is declared).
 */
export function sqliteOperations(store: SqliteStore): { operations: Map<string, Access>; undeclared: string[] } {
  const operations = new Map<string, Access>();
  const undeclared = Object.getOwnPropertyNames(SqliteStore.prototype).filter((n) => !SQLITE_LIFECYCLE.includes(n));
  for (const [name, value] of Object.entries(store) as [string, unknown][]) {
    if (typeof value !== 'function') continue;
    // op() marks what it puts on the store with its declaration
    const access = (value as { access?: Access }).access;
    if (access) operations.set(name, access);
    else undeclared.push(name);
  }
  return { operations, undeclared };
}

export class SqliteStore implements Store {
  private readonly db: Database.Database;
  private readonly ctx: Ctx;
  private readonly lagMs: number;
  private readonly gate: WriteGate;
  private closed = false;

  private constructor(opts: SqliteOptions) {
    mkdirSync(dirname(opts.file), { recursive: true });
    // `timeout` is SQLite's busy timeout: how long a writer waits for another process's lock
    this.db = new Database(opts.file, { timeout: opts.busyTimeoutMs ?? 2500 });
    this.gate = new WriteGate(this.db, opts.busyTimeoutMs ?? 2500);
    const clock = opts.clock ?? Date.now;
    this.lagMs = opts.changeLagMs ?? 1000;
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(opts.synchronous === 'normal' ? 'synchronous = NORMAL' : 'synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
    // statement journals (the undo of one statement or savepoint inside a transaction; never
    // needed after a crash: the WAL is the durable part) in memory, not spilled to a temp file
    // once past 64 KiB: a 10,000 burst's group commits wrote them at every group (docs/architecture.md, "Why a burst stays on time")
    this.db.pragma('temp_store = MEMORY');
    migrate(this.db);
    // read by statements while they run, i.e. once the write lock is held (see ./timers-statements.ts)
    this.db.function('store_now', { deterministic: false }, () => clock());
    this.ctx = { db: this.db, st: prepareAll(this.db), clock };
  }

  static async open(opts: SqliteOptions): Promise<SqliteStore> {
    return new SqliteStore(opts);
  }

  async now(): Promise<Date> {
    return new Date(this.ctx.clock());
  }

  async ping(): Promise<boolean> {
    if (this.closed) return false;
    return this.ctx.st.ping.get() !== undefined;
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

  // The port's operations: each is an area module's operation on this store's context, behind guard().

  // ── timers (./timers.ts) ────────────────────────────────────────────────────
  armTimer = this.op('armTimer', timers.armTimer);
  getTimer = this.op('getTimer', timers.getTimer);
  listTimers = this.op('listTimers', timers.listTimers);
  extendTimer = this.op('extendTimer', timers.extendTimer);
  resolveTimer = this.op('resolveTimer', timers.resolveTimer);
  extendTimerKeyed = this.op('extendTimerKeyed', timers.extendTimerKeyed);
  resolveTimerKeyed = this.op('resolveTimerKeyed', timers.resolveTimerKeyed);
  claimDueTimers = this.op('claimDueTimers', timers.claimDueTimers);
  pendingEscalations = this.op('pendingEscalations', timers.pendingEscalations);
  markEscalated = this.op('markEscalated', timers.markEscalated);
  recordEscalationFailure = this.op('recordEscalationFailure', timers.recordEscalationFailure);
  failedEscalations = this.op('failedEscalations', timers.failedEscalations);
  retryEscalation = this.op('retryEscalation', timers.retryEscalation);
  overdue = this.op('overdue', timers.overdue);
  countPendingEscalations = this.op('countPendingEscalations', timers.countPendingEscalations);
  stateCounts = this.op('stateCounts', timers.stateCounts);
  oldestUnacknowledged = this.op('oldestUnacknowledged', timers.oldestUnacknowledged);
  maxRecordedFence = this.op('maxRecordedFence', timers.maxRecordedFence);

  // ── incidents (./incidents.ts) ──────────────────────────────────────────────
  openIncident = this.op('openIncident', incidents.openIncident);
  getIncident = this.op('getIncident', incidents.getIncident);
  incidentForTimer = this.op('incidentForTimer', incidents.incidentForTimer);
  listIncidents = this.op('listIncidents', incidents.listIncidents);
  transitionIncident = this.op('transitionIncident', incidents.transitionIncident);
  oweAllClear = this.op('oweAllClear', incidents.oweAllClear);
  pendingAllClears = this.op('pendingAllClears', incidents.pendingAllClears);
  markAllClearDone = this.op('markAllClearDone', incidents.markAllClearDone);

  // ── deliveries (./deliveries.ts) ────────────────────────────────────────────
  addDeliveries = this.op('addDeliveries', deliveries.addDeliveries);
  deliveriesFor = this.op('deliveriesFor', deliveries.deliveriesFor);
  getDelivery = this.op('getDelivery', deliveries.getDelivery);
  claimDeliveries = this.op('claimDeliveries', deliveries.claimDeliveries);
  recordAttempt = this.op('recordAttempt', deliveries.recordAttempt);
  supersedePendingSos = this.op('supersedePendingSos', deliveries.supersedePendingSos);
  supersedeClaimed = this.op('supersedeClaimed', deliveries.supersedeClaimed);
  releaseClaim = this.op('releaseClaim', deliveries.releaseClaim);
  applyReceipt = this.op('applyReceipt', deliveries.applyReceipt);
  countDeliveriesSince = this.op('countDeliveriesSince', deliveries.countDeliveriesSince);
  deliveryBacklog = this.op('deliveryBacklog', deliveries.deliveryBacklog);

  // ── moderator actions and retention (./moderation.ts) ───────────────────────
  resendDelivery = this.op('resendDelivery', moderation.resendDelivery);
  cancelPendingDeliveries = this.op('cancelPendingDeliveries', moderation.cancelPendingDeliveries);
  addIncidentNote = this.op('addIncidentNote', moderation.addIncidentNote);
  notesFor = this.op('notesFor', moderation.notesFor);
  listAudit = this.op('listAudit', moderation.listAudit);
  recordAccess = this.op('recordAccess', moderation.recordAccess);
  openIncidentOf = this.op('openIncidentOf', moderation.openIncidentOf);
  personalData = this.op('personalData', personal.personalData);
  erasePerson = this.op('erasePerson', personal.erasePerson);
  redactClosed = this.op('redactClosed', moderation.redactClosed);

  // ── token revocation (./tokens.ts) ──────────────────────────────────────────
  revokeTokens = this.op('revokeTokens', tokens.revokeTokens);
  tokensNotBefore = this.op('tokensNotBefore', tokens.tokensNotBefore);

  // ── duress PIN (./duress.ts) ────────────────────────────────────────────────
  setDuressPin = this.op('setDuressPin', duress.setDuressPin);
  getDuressPin = this.op('getDuressPin', duress.getDuressPin);
  deleteDuressPin = this.op('deleteDuressPin', duress.deleteDuressPin);

  // ── contacts (./contacts.ts) ────────────────────────────────────────────────
  getContacts = this.op('getContacts', contacts.getContacts);
  replaceContacts = this.op('replaceContacts', contacts.replaceContacts);
  getContactSettings = this.op('getContactSettings', contacts.getContactSettings);
  setContactState = this.op('setContactState', contacts.setContactState);
  optInContact = this.op('optInContact', contacts.optInContact);
  contactsWithPhone = this.op('contactsWithPhone', replies.contactsWithPhone);
  addContactAck = this.op('addContactAck', replies.addContactAck);
  // one write, so one transaction (./contact-ids.ts)
  rekeyContactIds = this.op('rekeyContactIds', contactIds.rekeyContactIds);

  // ── group commit (./batch.ts) ───────────────────────────────────────────────
  escalateBatch = this.op('escalateBatch', batch.escalateBatch);
  incidentsForTimers = this.op('incidentsForTimers', batch.incidentsForTimers);
  contactsOf = this.op('contactsOf', batch.contactsOf);
  contactSettingsOf = this.op('contactSettingsOf', batch.contactSettingsOf);
  countDeliveriesSinceMany = this.op('countDeliveriesSinceMany', batch.countDeliveriesSinceMany);
  nextDeadline = this.op('nextDeadline', batch.nextDeadline);
  recordAttempts = this.op('recordAttempts', batch.recordAttempts);

  // ── location trail (./location.ts) ──────────────────────────────────────────
  addFixes = this.op('addFixes', location.addFixes);
  listFixes = this.op('listFixes', location.listFixes);
  lastFix = this.op('lastFix', location.lastFix);

  // ── safety (./safety.ts) ────────────────────────────────────────────────────
  raisePanic = this.op('raisePanic', safety.raisePanic);
  pendingPanicTexts = this.op('pendingPanicTexts', safety.pendingPanicTexts);
  markPanicTexted = this.op('markPanicTexted', safety.markPanicTexted);
  pendingDuress = this.op('pendingDuress', safety.pendingDuress);
  markDuressRaised = this.op('markDuressRaised', safety.markDuressRaised);
  claimWarnings = this.op('claimWarnings', safety.claimWarnings);
  addNotification = this.op('addNotification', safety.addNotification);
  addNotifications = this.op('addNotifications', safety.addNotifications);
  listNotifications = this.op('listNotifications', safety.listNotifications);
  markNotificationRead = this.op('markNotificationRead', safety.markNotificationRead);
  markAllNotificationsRead = this.op('markAllNotificationsRead', safety.markAllNotificationsRead);

  // ── plumbing ────────────────────────────────────────────────────────────────

  /**
   * An area's operation on this store's context, as an async method: a write through the
   * WriteGate, a read as it is; a busy or locked file and a closed store become `Unavailable`
   * (503 + Retry-After), the rest propagates. The operation runs whole when it is called (it
   * is synchronous); a throw is its promise rejecting, as from an `async` method, so a write
   * that throws outside a transaction() of its own does not fail the gate's group.
   * An ordinary own property (a class field), so proxies, spies and tests that replace one work.
   */
  private op<A extends unknown[], R>(name: string, o: Operation<A, R>): (...args: A) => Promise<R> {
    const body = async (args: A): Promise<R> => o.run(this.ctx, ...args);
    const call = o.access === 'write' ? (args: A) => this.gate.run(() => body(args)) as Promise<R> : body;
    const fn = async (...args: A): Promise<R> => {
      try {
        return await call(args);
      } catch (err) {
        throw unavailableOr(name, err);
      }
    };
    return Object.assign(fn, { access: o.access });
  }
}
