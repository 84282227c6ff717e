/**
 * Cluster store: MongoDB through mongoose, on its own connection (never the global
 * mongoose singleton). Queries live in ./timers.ts, ./incidents.ts, ./deliveries.ts;
 * this file owns the connection, the clock, index builds and error translation.
 *
 *   const store = await MongoStore.connect({ uri: 'mongodb://h1,h2,h3/vigil?replicaSet=rs0' });
 *
 * Every write carries the configured write concern (default "majority"); the sweep's and
 * the dispatcher's reads use readConcern "majority", so they never act on data that a
 * failover could roll back. See docs/mongodb.md.
 */
import mongoose, { type Connection } from 'mongoose';
import type { Contact } from '../../domain/contact.js';
import type { Delivery, DeliveryStatus } from '../../domain/delivery.js';
import { Invalid, Unavailable } from '../../domain/errors.js';
import type { Incident, IncidentStatus } from '../../domain/incident.js';
import type { Timer, TimerStatus } from '../../domain/timer.js';
import type { ArmResult, ChangedSince, DeliveryOutcome, IdempotencyClaim, NewDelivery, NewTimer, Store } from '../port.js';
import { ServerClock } from './clock.js';
import * as deliveries from './deliveries.js';
import { isUnreachable, redactUri } from './errors.js';
import * as incidents from './incidents.js';
import { makeModels } from './schemas.js';
import * as timers from './timers.js';
import type { Ctx, WriteConcern } from './writes.js';

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
  /** debug hook: every command sent to the server (name and concerns, never the documents) */
  onCommand?: (c: CommandInfo) => void;
}

export interface CommandInfo {
  name: string;
  writeConcern?: unknown;
  readConcern?: unknown;
}

export type ServerKind = 'mongodb' | 'ferretdb';

const DEFAULTS = { writeConcern: 'majority' as const, writeTimeoutMs: 5000, serverSelectionTimeoutMs: 5000, clockRefreshMs: 5000, pingTimeoutMs: 2000 };

/** The database named in the URI path, if any. */
const dbInUri = (uri: string): string | undefined => /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]+)/.exec(uri)?.[1];

export class MongoStore implements Store {
  private readonly ctx: Ctx;
  private readonly clock: ServerClock;
  private commands = 0;
  private closing: Promise<void> | undefined;
  private kind: Promise<ServerKind> | undefined;

  private constructor(
    private readonly conn: Connection,
    private readonly settings: Required<Omit<MongoStoreOptions, 'onCommand' | 'dbName'>> & Pick<MongoStoreOptions, 'onCommand'>,
  ) {
    const wc: WriteConcern = new mongoose.mongo.WriteConcern(settings.writeConcern, settings.writeTimeoutMs);
    this.clock = new ServerClock(() => this.serverTime(), settings.clockRefreshMs);
    this.ctx = { m: makeModels(conn), now: () => this.clock.now(), wc };
    conn.getClient().on('commandStarted', (e) => {
      this.commands++;
      settings.onCommand?.({ name: e.commandName, writeConcern: e.command.writeConcern, readConcern: e.command.readConcern });
    });
  }

  /** Connect, fail fast when no server answers, and build the indexes. */
  static async connect(opts: MongoStoreOptions): Promise<MongoStore> {
    const s = { ...DEFAULTS, ...opts };
    if (s.writeConcern !== 'majority' && !(Number.isInteger(s.writeConcern) && s.writeConcern >= 1)) {
      throw Invalid('invalid_write_concern', `writeConcern must be "majority" or an integer >= 1, got ${String(s.writeConcern)}`);
    }
    const where = redactUri(s.uri);
    const conn = mongoose.createConnection(s.uri, {
      dbName: s.dbName ?? dbInUri(s.uri) ?? 'vigil',
      serverSelectionTimeoutMS: s.serverSelectionTimeoutMs,
      monitorCommands: true,
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
      await store.buildIndexes();
    } catch (err) {
      await store.close();
      const why = err instanceof Error ? err.message : String(err);
      throw new Error(`MongoDB at ${where}: building the indexes failed: ${why}`, { cause: err });
    }
    return store;
  }

  /** Commands sent to the server since connect (the round-trip counter). */
  get roundTrips(): number {
    return this.commands;
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

  async ping(): Promise<boolean> {
    if (this.closing) return false;
    try {
      const r = await this.admin().command({ ping: 1 }, { timeoutMS: this.settings.pingTimeoutMs });
      return r.ok === 1;
    } catch {
      return false;
    }
  }

  close(): Promise<void> {
    this.closing ??= this.conn.close();
    return this.closing;
  }

  // ── timers ──────────────────────────────────────────────────────────────────

  armTimer(t: NewTimer, idem?: IdempotencyClaim): Promise<ArmResult> {
    return this.guard('armTimer', () => timers.armTimer(this.ctx, t, idem));
  }
  getTimer(id: string, userId?: string): Promise<Timer | null> {
    return this.guard('getTimer', () => timers.getTimer(this.ctx, id, userId));
  }
  listTimers(userId: string, filter: { status?: TimerStatus } & ChangedSince = {}): Promise<Timer[]> {
    return this.guard('listTimers', () => timers.listTimers(this.ctx, userId, filter));
  }
  extendTimer(id: string, userId: string, seconds: number, caps: { maxExtensions: number; maxTotalSeconds: number }): Promise<Timer | null> {
    return this.guard('extendTimer', () => timers.extendTimer(this.ctx, id, userId, seconds, caps));
  }
  resolveTimer(id: string, userId: string, to: 'safe' | 'cancelled'): Promise<Timer | null> {
    return this.guard('resolveTimer', () => timers.resolveTimer(this.ctx, id, userId, to));
  }
  claimDueTimers(limit: number, fence: number): Promise<Timer[]> {
    return this.guard('claimDueTimers', () => timers.claimDueTimers(this.ctx, limit, fence));
  }
  pendingEscalations(limit: number): Promise<Timer[]> {
    return this.guard('pendingEscalations', () => timers.pendingEscalations(this.ctx, limit));
  }
  markEscalated(timerId: string, incidentId: string): Promise<boolean> {
    return this.guard('markEscalated', () => timers.markEscalated(this.ctx, timerId, incidentId));
  }
  overdue(): Promise<{ count: number; oldest?: Date }> {
    return this.guard('overdue', () => timers.overdue(this.ctx));
  }

  // ── incidents ───────────────────────────────────────────────────────────────

  openIncident(timer: Timer, fence: number, id: string): Promise<{ incident: Incident; created: boolean }> {
    return this.guard('openIncident', () => incidents.openIncident(this.ctx, timer, fence, id));
  }
  getIncident(id: string): Promise<Incident | null> {
    return this.guard('getIncident', () => incidents.getIncident(this.ctx, id));
  }
  incidentForTimer(timerId: string): Promise<Incident | null> {
    return this.guard('incidentForTimer', () => incidents.incidentForTimer(this.ctx, timerId));
  }
  listIncidents(filter: { status?: IncidentStatus } & ChangedSince = {}): Promise<Incident[]> {
    return this.guard('listIncidents', () => incidents.listIncidents(this.ctx, filter));
  }
  transitionIncident(id: string, from: readonly IncidentStatus[], to: IncidentStatus, by: string): Promise<Incident | null> {
    return this.guard('transitionIncident', () => incidents.transitionIncident(this.ctx, id, from, to, by));
  }

  // ── deliveries ──────────────────────────────────────────────────────────────

  addDeliveries(incident: Incident, list: NewDelivery[]): Promise<Delivery[]> {
    return this.guard('addDeliveries', () => deliveries.addDeliveries(this.ctx, incident, list));
  }
  deliveriesFor(incidentIds: string[]): Promise<Delivery[]> {
    return this.guard('deliveriesFor', () => deliveries.deliveriesFor(this.ctx, incidentIds));
  }
  getDelivery(key: string): Promise<Delivery | null> {
    return this.guard('getDelivery', () => deliveries.getDelivery(this.ctx, key));
  }
  claimDeliveries(limit: number, leaseMs: number): Promise<Delivery[]> {
    return this.guard('claimDeliveries', () => deliveries.claimDeliveries(this.ctx, limit, leaseMs));
  }
  recordAttempt(key: string, attempt: number, outcome: DeliveryOutcome): Promise<Delivery | null> {
    return this.guard('recordAttempt', () => deliveries.recordAttempt(this.ctx, key, attempt, outcome));
  }
  applyReceipt(providerMessageId: string, to: 'sent' | 'delivered' | 'failed', from: readonly DeliveryStatus[]): Promise<Delivery | null> {
    return this.guard('applyReceipt', () => deliveries.applyReceipt(this.ctx, providerMessageId, to, from));
  }
  countDeliveriesSince(userId: string, since: Date): Promise<number> {
    return this.guard('countDeliveriesSince', () => deliveries.countDeliveriesSince(this.ctx, userId, since));
  }
  deliveryBacklog(): Promise<{ pending: number; oldestDue?: Date; dead: number }> {
    return this.guard('deliveryBacklog', () => deliveries.deliveryBacklog(this.ctx));
  }

  // ── contacts ────────────────────────────────────────────────────────────────

  getContacts(userId: string): Promise<Contact[]> {
    return this.guard('getContacts', () => incidents.getContacts(this.ctx, userId));
  }
  replaceContacts(userId: string, contacts: Contact[]): Promise<Contact[]> {
    return this.guard('replaceContacts', () => incidents.replaceContacts(this.ctx, userId, contacts));
  }

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
    await Promise.all([m.timers.createIndexes(), m.incidents.createIndexes(), m.deliveries.createIndexes(), m.contacts.createIndexes()]);
  }

  /** Closed store and lost connections become `Unavailable` (503, readiness false); the rest propagates. */
  private async guard<T>(op: string, fn: () => Promise<T>): Promise<T> {
    if (this.closing) throw Unavailable('store_closed', `${op}: the MongoDB store is closed`);
    try {
      return await fn();
    } catch (err) {
      if (isUnreachable(err)) throw Unavailable('store_unavailable', `${op}: MongoDB is not reachable`, err);
      throw err;
    }
  }
}
