/**
 * Cluster store: MongoDB through mongoose on its own connection (never the global
 * singleton). Queries live in ./timers.ts, ./incidents.ts, ./deliveries.ts, ./contacts.ts;
 * this file owns the connection, the clock, index builds and error translation.
 * Every write carries the configured write concern; reads that drive escalation use
 * readConcern majority, so they never act on data a failover could roll back.
 * Every operation is bounded (`operationTimeoutMs`): a server that accepts and never answers
 * makes the call fail as `store_unavailable` (retryable) instead of a promise that never settles.
 */
import mongoose, { type Connection } from 'mongoose';
import { Invalid, Unavailable } from '../../domain/errors.js';
import type { Store } from '../port.js';
import * as batch from './batch.js';
import { ServerClock } from './clock.js';
import * as deliveries from './deliveries.js';
import { redactUri, unavailableOr } from './errors.js';
import * as contactIds from './contact-ids.js';
import * as contacts from './contacts.js';
import * as incidents from './incidents.js';
import * as location from './location.js';
import * as safety from './safety.js';
import * as moderation from './moderation.js';
import * as personal from './personal.js';
import { makeModels } from './schemas.js';
import * as timers from './timers.js';
import * as tokens from './tokens.js';
import * as duress from './duress.js';
import * as replies from './replies.js';
import { FERRETDB_UPDATES_PER_COMMAND, type Ctx, type WriteConcern } from './writes.js';

export interface MongoStoreOptions {
  /** connection string, e.g. `mongodb://h1,h2,h3/vigil?replicaSet=rs0` */
  uri: string;
  /** database; default: the one named in the URI, else `vigil` */
  dbName?: string;
  /** write concern of every write; default `'majority'` (a number = that many members, ≥ 1) */
  writeConcern?: 'majority' | number;
  /** how long a write waits for its write concern before its outcome counts as unknown (ms); default 5000 */
  writeTimeoutMs?: number;
  /** how long start-up and each operation wait to find a suitable server (ms); default 5000 */
  serverSelectionTimeoutMs?: number;
  /** how often now() re-reads the server clock (ms); 0 = on every call; default 5000 */
  clockRefreshMs?: number;
  /** how long ping() waits for the server (ms); default 2000 */
  pingTimeoutMs?: number;
  /**
   * longest one operation of the port may take, end to end (ms): after it the call fails as
   * `store_unavailable` and is no longer waited for. Also the server's `maxTimeMS` of queries
   * and the socket timeout of each round trip. Must exceed `writeTimeoutMs` (a write waiting
   * for its write concern is told so by the server first); default 10000
   */
  operationTimeoutMs?: number;
  /** debug hook: every command sent to the server (name and concerns, never the documents); monitoring is on only when given */
  onCommand?: (c: CommandInfo) => void;
}

export interface CommandInfo {
  name: string;
  writeConcern?: unknown;
  readConcern?: unknown;
}

export type ServerKind = 'mongodb' | 'ferretdb';

const DEFAULTS = {
  writeConcern: 'majority' as const,
  writeTimeoutMs: 5000,
  serverSelectionTimeoutMs: 5000,
  clockRefreshMs: 5000,
  pingTimeoutMs: 2000,
  operationTimeoutMs: 10_000,
};

/** The database named in the URI path, if any. */
const dbInUri = (uri: string): string | undefined => /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]+)/.exec(uri)?.[1];

export class MongoStore implements Store {
  private readonly ctx: Ctx;
  private readonly clock: ServerClock;
  private closing: Promise<void> | undefined;
  private kind: Promise<ServerKind> | undefined;

  private constructor(
    private readonly conn: Connection,
    private readonly settings: Required<Omit<MongoStoreOptions, 'onCommand' | 'dbName'>> & Pick<MongoStoreOptions, 'onCommand'>,
  ) {
    const wc: WriteConcern = new mongoose.mongo.WriteConcern(settings.writeConcern, settings.writeTimeoutMs);
    this.clock = new ServerClock(() => this.serverTime(), settings.clockRefreshMs);
    this.ctx = { m: makeModels(conn), now: () => this.clock.now(), wc, updatesPerCommand: Infinity };
    // the server gives up on a query (find, findOne, findOneAndUpdate, count, aggregate) at the
    // same bound, so a query this store stopped waiting for does not keep running there
    conn.set('maxTimeMS', settings.operationTimeoutMs);
    const { onCommand } = settings;
    if (onCommand)
      conn
        .getClient()
        .on('commandStarted', (e) =>
          onCommand({ name: e.commandName, writeConcern: e.command.writeConcern, readConcern: e.command.readConcern }),
        );
  }

  /** Connect, fail fast when no server answers, and build the indexes. */
  static async connect(opts: MongoStoreOptions): Promise<MongoStore> {
    const s = { ...DEFAULTS, ...opts };
    if (s.writeConcern !== 'majority' && !(Number.isInteger(s.writeConcern) && s.writeConcern >= 1)) {
      throw Invalid('invalid_write_concern', `writeConcern must be "majority" or an integer >= 1, got ${String(s.writeConcern)}`);
    }
    if (!(s.operationTimeoutMs > s.writeTimeoutMs)) {
      throw Invalid(
        'invalid_operation_timeout',
        `operationTimeoutMs (${s.operationTimeoutMs}) must exceed writeTimeoutMs (${s.writeTimeoutMs})`,
      );
    }
    const where = redactUri(s.uri);
    const conn = mongoose.createConnection(s.uri, {
      dbName: s.dbName ?? dbInUri(s.uri) ?? 'vigil',
      serverSelectionTimeoutMS: s.serverSelectionTimeoutMs,
      // a peer that stops answering mid-command: the connection is closed and the command fails
      // (MongoNetworkTimeoutError) rather than holding a pooled connection forever
      socketTimeoutMS: s.operationTimeoutMs,
      // command events are a debug hook: emitted only when someone listens
      monitorCommands: s.onCommand !== undefined,
      bufferCommands: false,
      autoIndex: false,
      autoCreate: false,
      appName: 'vigil',
    });
    // a failed initial connection rejects asPromise() below AND emits 'error', which would
    // throw without a listener; operations report their own errors, so the event is ignored
    conn.on('error', () => undefined);
    try {
      await conn.asPromise();
    } catch (err) {
      await conn.close().catch(() => undefined);
      const why = err instanceof Error ? err.message : String(err);
      throw Unavailable('store_unreachable', `cannot reach MongoDB at ${where} within ${s.serverSelectionTimeoutMs} ms: ${why}`, err);
    }
    const store = new MongoStore(conn, s);
    try {
      if ((await store.serverKind()) === 'ferretdb') store.ctx.updatesPerCommand = FERRETDB_UPDATES_PER_COMMAND;
    } catch (err) {
      await store.close();
      const why = err instanceof Error ? err.message : String(err);
      throw Unavailable('store_unreachable', `MongoDB at ${where} did not answer buildInfo: ${why}`, err);
    }
    try {
      await store.buildIndexes();
    } catch (err) {
      await store.close();
      const why = err instanceof Error ? err.message : String(err);
      throw new Error(`MongoDB at ${where}: building the indexes failed: ${why}`, { cause: err });
    }
    return store;
  }

  /** What answers on the other end, from `buildInfo` (FerretDB adds `ferretdbVersion`). */
  serverKind(): Promise<ServerKind> {
    this.kind ??= this.guard('serverKind', async () => {
      const info = await this.admin().command({ buildInfo: 1 });
      return 'ferretdbVersion' in info ? ('ferretdb' as const) : ('mongodb' as const);
    }).catch((err: unknown) => {
      this.kind = undefined; // ask again next time
      throw err;
    });
    return this.kind;
  }

  async now(): Promise<Date> {
    return this.guard('now', () => this.clock.now());
  }

  /**
   * Updates are stamped by the server as they apply; inserts carry the clock read just before
   * sending, and may wait for a server to be selected before they land.
   */
  changeLagMs(): number {
    return this.settings.serverSelectionTimeoutMs + 1000;
  }

  async ping(): Promise<boolean> {
    if (this.closing) return false;
    try {
      const ms = this.settings.pingTimeoutMs;
      const r = await withDeadline(
        this.admin().command({ ping: 1 }, { timeoutMS: ms }),
        ms,
        () => new Error(`ping: no answer within ${ms} ms`),
      );
      return r.ok === 1;
    } catch {
      return false;
    }
  }

  close(): Promise<void> {
    this.closing ??= this.conn.close();
    return this.closing;
  }

  // The port's operations: each is a module function on this store's context, wrapped in guard().

  // ── timers ──────────────────────────────────────────────────────────────────
  readonly armTimer = this.op('armTimer', timers.armTimer);
  readonly getTimer = this.op('getTimer', timers.getTimer);
  readonly listTimers = this.op('listTimers', timers.listTimers);
  readonly extendTimer = this.op('extendTimer', timers.extendTimer);
  readonly resolveTimer = this.op('resolveTimer', timers.resolveTimer);
  readonly extendTimerKeyed = this.op('extendTimerKeyed', timers.extendTimerKeyed);
  readonly resolveTimerKeyed = this.op('resolveTimerKeyed', timers.resolveTimerKeyed);
  readonly claimDueTimers = this.op('claimDueTimers', timers.claimDueTimers);
  readonly pendingEscalations = this.op('pendingEscalations', timers.pendingEscalations);
  readonly markEscalated = this.op('markEscalated', timers.markEscalated);
  readonly recordEscalationFailure = this.op('recordEscalationFailure', timers.recordEscalationFailure);
  readonly failedEscalations = this.op('failedEscalations', timers.failedEscalations);
  readonly retryEscalation = this.op('retryEscalation', timers.retryEscalation);
  readonly overdue = this.op('overdue', timers.overdue);
  readonly countPendingEscalations = this.op('countPendingEscalations', timers.countPendingEscalations);
  readonly stateCounts = this.op('stateCounts', timers.stateCounts);
  readonly oldestUnacknowledged = this.op('oldestUnacknowledged', timers.oldestUnacknowledged);
  readonly maxRecordedFence = this.op('maxRecordedFence', timers.maxRecordedFence);

  // ── incidents ───────────────────────────────────────────────────────────────
  readonly openIncident = this.op('openIncident', incidents.openIncident);
  readonly getIncident = this.op('getIncident', incidents.getIncident);
  readonly incidentForTimer = this.op('incidentForTimer', incidents.incidentForTimer);
  readonly listIncidents = this.op('listIncidents', incidents.listIncidents);
  readonly transitionIncident = this.op('transitionIncident', incidents.transitionIncident);
  readonly oweAllClear = this.op('oweAllClear', incidents.oweAllClear);
  readonly pendingAllClears = this.op('pendingAllClears', incidents.pendingAllClears);
  readonly markAllClearDone = this.op('markAllClearDone', incidents.markAllClearDone);

  // ── deliveries ──────────────────────────────────────────────────────────────
  readonly addDeliveries = this.op('addDeliveries', deliveries.addDeliveries);
  readonly deliveriesFor = this.op('deliveriesFor', deliveries.deliveriesFor);
  readonly getDelivery = this.op('getDelivery', deliveries.getDelivery);
  readonly claimDeliveries = this.op('claimDeliveries', deliveries.claimDeliveries);
  readonly recordAttempt = this.op('recordAttempt', deliveries.recordAttempt);
  readonly supersedePendingSos = this.op('supersedePendingSos', deliveries.supersedePendingSos);
  readonly supersedeClaimed = this.op('supersedeClaimed', deliveries.supersedeClaimed);
  readonly releaseClaim = this.op('releaseClaim', deliveries.releaseClaim);
  readonly applyReceipt = this.op('applyReceipt', deliveries.applyReceipt);
  readonly countDeliveriesSince = this.op('countDeliveriesSince', deliveries.countDeliveriesSince);
  readonly deliveryBacklog = this.op('deliveryBacklog', deliveries.deliveryBacklog);

  // ── moderator actions and retention ─────────────────────────────────────────
  readonly resendDelivery = this.op('resendDelivery', moderation.resendDelivery);
  readonly cancelPendingDeliveries = this.op('cancelPendingDeliveries', moderation.cancelPendingDeliveries);
  readonly addIncidentNote = this.op('addIncidentNote', moderation.addIncidentNote);
  readonly notesFor = this.op('notesFor', moderation.notesFor);
  readonly listAudit = this.op('listAudit', moderation.listAudit);
  readonly recordAccess = this.op('recordAccess', moderation.recordAccess);
  readonly openIncidentOf = this.op('openIncidentOf', moderation.openIncidentOf);
  readonly personalData = this.op('personalData', personal.personalData);
  readonly erasePerson = this.op('erasePerson', personal.erasePerson);
  readonly redactClosed = this.op('redactClosed', moderation.redactClosed);

  // ── token revocation (./tokens.ts) ──────────────────────────────────────────
  readonly revokeTokens = this.op('revokeTokens', tokens.revokeTokens);
  readonly tokensNotBefore = this.op('tokensNotBefore', tokens.tokensNotBefore);

  // ── duress PIN (./duress.ts) ────────────────────────────────────────────────
  readonly setDuressPin = this.op('setDuressPin', duress.setDuressPin);
  readonly getDuressPin = this.op('getDuressPin', duress.getDuressPin);
  readonly deleteDuressPin = this.op('deleteDuressPin', duress.deleteDuressPin);

  // ── contacts ────────────────────────────────────────────────────────────────
  readonly getContacts = this.op('getContacts', contacts.getContacts);
  readonly replaceContacts = this.op('replaceContacts', contacts.replaceContacts);
  readonly getContactSettings = this.op('getContactSettings', contacts.getContactSettings);
  readonly setContactState = this.op('setContactState', contacts.setContactState);
  readonly optInContact = this.op('optInContact', contacts.optInContact);
  readonly contactsWithPhone = this.op('contactsWithPhone', replies.contactsWithPhone);
  readonly addContactAck = this.op('addContactAck', replies.addContactAck);

  /**
   * Many operations, each bounded by the server's maxTimeMS: the whole is not held to
   * `operationTimeoutMs` (a large store takes longer), nor left behind by a closed store.
   */
  readonly rekeyContactIds: Store['rekeyContactIds'] = async (key, onStep) => {
    if (this.closing) throw Unavailable('store_closed', 'rekeyContactIds: the MongoDB store is closed');
    try {
      return await contactIds.rekeyContactIds(this.ctx, key, onStep);
    } catch (err) {
      throw unavailableOr('rekeyContactIds', err);
    }
  };

  // ── group commit (./batch.ts) ───────────────────────────────────────────────
  readonly escalateBatch = this.op('escalateBatch', batch.escalateBatch);
  readonly incidentsForTimers = this.op('incidentsForTimers', batch.incidentsForTimers);
  readonly contactsOf = this.op('contactsOf', batch.contactsOf);
  readonly contactSettingsOf = this.op('contactSettingsOf', batch.contactSettingsOf);
  readonly countDeliveriesSinceMany = this.op('countDeliveriesSinceMany', batch.countDeliveriesSinceMany);
  readonly nextDeadline = this.op('nextDeadline', batch.nextDeadline);
  readonly recordAttempts = this.op('recordAttempts', batch.recordAttempts);
  // ── location trail (./location.ts) ──────────────────────────────────────────
  readonly addFixes = this.op('addFixes', location.addFixes);
  readonly listFixes = this.op('listFixes', location.listFixes);
  readonly lastFix = this.op('lastFix', location.lastFix);
  // ── safety (./safety.ts) ─────────────────────────────────────────────────────
  readonly raisePanic = this.op('raisePanic', safety.raisePanic);
  readonly pendingPanicTexts = this.op('pendingPanicTexts', safety.pendingPanicTexts);
  readonly markPanicTexted = this.op('markPanicTexted', safety.markPanicTexted);
  readonly pendingDuress = this.op('pendingDuress', safety.pendingDuress);
  readonly markDuressRaised = this.op('markDuressRaised', safety.markDuressRaised);
  readonly claimWarnings = this.op('claimWarnings', safety.claimWarnings);
  readonly addNotification = this.op('addNotification', safety.addNotification);
  readonly addNotifications = this.op('addNotifications', safety.addNotifications);
  readonly listNotifications = this.op('listNotifications', safety.listNotifications);
  readonly markNotificationRead = this.op('markNotificationRead', safety.markNotificationRead);
  readonly markAllNotificationsRead = this.op('markAllNotificationsRead', safety.markAllNotificationsRead);

  // ── plumbing ────────────────────────────────────────────────────────────────

  private admin() {
    const db = this.conn.db;
    if (!db) throw Unavailable('store_not_connected', 'the MongoDB connection is not open');
    return db.admin();
  }

  private async serverTime(): Promise<Date> {
    const hello = await this.admin().command({ hello: 1 });
    const t: unknown = hello.localTime;
    if (!(t instanceof Date)) throw new Error('MongoDB hello did not report localTime');
    return t;
  }

  /** Additive (createIndexes, not syncIndexes): an index added by an operator is never dropped. */
  private async buildIndexes(): Promise<void> {
    const { m } = this.ctx;
    await Promise.all([
      m.notifications.createIndexes(),
      m.timers.createIndexes(),
      m.incidents.createIndexes(),
      m.deliveries.createIndexes(),
      m.contacts.createIndexes(),
      m.fixes.createIndexes(),
    ]);
    await Promise.all([m.timers.createIndexes(), m.incidents.createIndexes(), m.deliveries.createIndexes(), m.contacts.createIndexes()]);
    await Promise.all([m.audit.createIndexes(), m.notes.createIndexes(), m.earlyReceipts.createIndexes(), m.keying.createIndexes()]);
  }

  /** A module function bound to this store's context, behind guard(). */
  private op<A extends unknown[], R>(name: string, fn: (ctx: Ctx, ...args: A) => Promise<R>): (...args: A) => Promise<R> {
    return (...args) => this.guard(name, () => fn(this.ctx, ...args));
  }

  /**
   * Closed store, lost connections and transient refusals become `Unavailable` (503, readiness false;
   * ./errors.ts unavailableOr), and so does an
   * operation that has not settled within `operationTimeoutMs`: it is abandoned (the socket
   * timeout ends its round trip later, the server's maxTimeMS its query). Its outcome is
   * unknown, as for a connection lost mid-write, and every operation is safe to retry. The rest
   * propagates.
   */
  private async guard<T>(op: string, fn: () => Promise<T>): Promise<T> {
    if (this.closing) throw Unavailable('store_closed', `${op}: the MongoDB store is closed`);
    const ms = this.settings.operationTimeoutMs;
    try {
      return await withDeadline(fn(), ms, () => Unavailable('store_unavailable', `${op}: MongoDB did not answer within ${ms} ms`));
    } catch (err) {
      throw unavailableOr(op, err);
    }
  }
}

/** `p`, or the error `late()` makes once `ms` pass without it settling (`p` goes on unobserved). */
async function withDeadline<T>(p: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  try {
    return await Promise.race([p, expired]);
  } finally {
    clearTimeout(timer);
  }
}
