/**
 * Embedded store: one SQLite file (better-sqlite3, WAL). Several processes on one host
 * may share the file (cluster tests do); every transition is a single
 * `UPDATE … WHERE id = ? AND status IN (…) RETURNING *`, and multi-row writes run in
 * IMMEDIATE transactions so concurrent writers queue on the file lock (busy_timeout).
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Contact } from '../../domain/contact.js';
import type { Delivery, DeliveryStatus } from '../../domain/delivery.js';
import type { Incident, IncidentStatus } from '../../domain/incident.js';
import type { Timer, TimerStatus } from '../../domain/timer.js';
import type { ArmResult, ChangedSince, DeliveryOutcome, IdempotencyClaim, NewDelivery, NewTimer, Store } from '../port.js';
import { migrate } from './migrate.js';
import {
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
  /** how long a writer waits for another process's write lock (ms), default 5000 */
  busyTimeoutMs?: number;
}

const LIVE_SQL = "('active','extended')";
const inList = (values: readonly string[]) => values.map((v) => `'${v.replace(/'/g, "''")}'`).join(',');

export class SqliteStore implements Store {
  private readonly db: Database.Database;
  private readonly clock: () => number;
  private readonly statements = new Map<string, Database.Statement>();
  private closed = false;

  /** A prepared statement, compiled once per SQL text (the texts are a small fixed set). */
  private sql(text: string): Database.Statement {
    let st = this.statements.get(text);
    if (!st) {
      st = this.db.prepare(text);
      this.statements.set(text, st);
    }
    return st;
  }

  private constructor(opts: SqliteOptions) {
    mkdirSync(dirname(opts.file), { recursive: true });
    this.db = new Database(opts.file);
    this.clock = opts.clock ?? Date.now;
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
    this.db.pragma('foreign_keys = ON');
    migrate(this.db);
  }

  static async open(opts: SqliteOptions): Promise<SqliteStore> {
    return new SqliteStore(opts);
  }

  async now(): Promise<Date> {
    return new Date(this.clock());
  }

  async ping(): Promise<boolean> {
    if (this.closed) return false;
    return this.sql('SELECT 1 AS ok').get() !== undefined;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }

  // ── timers ──────────────────────────────────────────────────────────────────

  async armTimer(t: NewTimer, idem?: IdempotencyClaim): Promise<ArmResult> {
    const now = this.clock();
    const run = this.db.transaction((): ArmResult => {
      if (idem) {
        const prior = this.sql('SELECT fingerprint, timer_id FROM idempotency WHERE user_id = ? AND key = ?')
          .get(t.userId, idem.key) as { fingerprint: string; timer_id: string } | undefined;
        if (prior) {
          if (prior.fingerprint !== idem.fingerprint) return { kind: 'idempotency_mismatch' };
          const row = this.sql('SELECT * FROM timers WHERE id = ?').get(prior.timer_id) as TimerRow;
          return { kind: 'replayed', timer: toTimer(row) };
        }
      }
      const live = this.sql(`SELECT * FROM timers WHERE user_id = ? AND status IN ${LIVE_SQL}`)
        .get(t.userId) as TimerRow | undefined;
      if (live) return { kind: 'live_timer_exists', timer: toTimer(live) };
      const row = this.sql(
          `INSERT INTO timers (id, user_id, status, started_at, expires_at, updated_at, location_name, lat, lng, display_name)
           VALUES (@id, @userId, 'active', @startedAt, @expiresAt, @now, @locationName, @lat, @lng, @displayName) RETURNING *`,
        )
        .get({
          id: t.id,
          userId: t.userId,
          startedAt: t.startedAt.getTime(),
          expiresAt: t.expiresAt.getTime(),
          now,
          locationName: t.locationName ?? null,
          lat: t.location?.lat ?? null,
          lng: t.location?.lng ?? null,
          displayName: t.displayName ?? null,
        }) as TimerRow;
      if (idem) {
        this.sql('INSERT INTO idempotency (user_id, key, fingerprint, timer_id, created_at) VALUES (?, ?, ?, ?, ?)')
          .run(t.userId, idem.key, idem.fingerprint, t.id, now);
      }
      return { kind: 'created', timer: toTimer(row) };
    });
    return run.immediate();
  }

  async getTimer(id: string, userId?: string): Promise<Timer | null> {
    const row = (
      userId === undefined
        ? this.sql('SELECT * FROM timers WHERE id = ?').get(id)
        : this.sql('SELECT * FROM timers WHERE id = ? AND user_id = ?').get(id, userId)
    ) as TimerRow | undefined;
    return row ? toTimer(row) : null;
  }

  async listTimers(userId: string, filter: { status?: TimerStatus } & ChangedSince = {}): Promise<Timer[]> {
    const where = ['user_id = @userId'];
    if (filter.status) where.push('status = @status');
    if (filter.since) where.push('updated_at > @since');
    const order = filter.since ? 'updated_at ASC' : 'started_at DESC, id DESC';
    const rows = this.sql(`SELECT * FROM timers WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT @limit`)
      .all({ userId, status: filter.status ?? null, since: filter.since?.getTime() ?? null, limit: filter.limit ?? 500 }) as TimerRow[];
    return rows.map(toTimer);
  }

  async extendTimer(
    id: string,
    userId: string,
    seconds: number,
    caps: { maxExtensions: number; maxTotalSeconds: number },
  ): Promise<Timer | null> {
    const row = this.sql(
        `UPDATE timers SET expires_at = expires_at + @ms, status = 'extended', extensions = extensions + 1, updated_at = @now
         WHERE id = @id AND user_id = @userId AND status IN ${LIVE_SQL} AND expires_at > @now
           AND extensions < @maxExtensions AND (expires_at + @ms - started_at) <= @maxTotalMs
         RETURNING *`,
      )
      .get({
        id,
        userId,
        ms: seconds * 1000,
        now: this.clock(),
        maxExtensions: caps.maxExtensions,
        maxTotalMs: caps.maxTotalSeconds * 1000,
      }) as TimerRow | undefined;
    return row ? toTimer(row) : null;
  }

  async resolveTimer(id: string, userId: string, to: 'safe' | 'cancelled'): Promise<Timer | null> {
    const row = this.sql(
        `UPDATE timers SET status = @to, resolved_at = @now, updated_at = @now
         WHERE id = @id AND user_id = @userId AND status IN ${LIVE_SQL} RETURNING *`,
      )
      .get({ id, userId, to, now: this.clock() }) as TimerRow | undefined;
    return row ? toTimer(row) : null;
  }

  async claimDueTimers(limit: number, fence: number): Promise<Timer[]> {
    const rows = this.sql(
        `UPDATE timers SET status = 'expired', escalation = 'pending', resolved_at = @now, updated_at = @now, expired_by_fence = @fence
         WHERE id IN (SELECT id FROM timers WHERE status IN ${LIVE_SQL} AND expires_at <= @now ORDER BY expires_at LIMIT @limit)
           AND status IN ${LIVE_SQL} AND expires_at <= @now
         RETURNING *`,
      )
      .all({ now: this.clock(), fence, limit }) as TimerRow[];
    return rows.map(toTimer).sort((a, b) => a.expiresAt.getTime() - b.expiresAt.getTime());
  }

  async pendingEscalations(limit: number): Promise<Timer[]> {
    const rows = this.sql("SELECT * FROM timers WHERE escalation = 'pending' ORDER BY expires_at LIMIT ?")
      .all(limit) as TimerRow[];
    return rows.map(toTimer);
  }

  async markEscalated(timerId: string, incidentId: string): Promise<boolean> {
    const r = this.sql("UPDATE timers SET escalation = 'done', incident_id = ?, updated_at = ? WHERE id = ? AND escalation = 'pending'")
      .run(incidentId, this.clock(), timerId);
    return r.changes === 1;
  }

  async overdue(): Promise<{ count: number; oldest?: Date }> {
    const r = this.sql(`SELECT COUNT(*) AS n, MIN(expires_at) AS oldest FROM timers WHERE status IN ${LIVE_SQL} AND expires_at <= ?`)
      .get(this.clock()) as { n: number; oldest: number | null };
    return r.oldest === null ? { count: r.n } : { count: r.n, oldest: new Date(r.oldest) };
  }

  // ── incidents ───────────────────────────────────────────────────────────────

  async openIncident(timer: Timer, fence: number, id: string): Promise<{ incident: Incident; created: boolean }> {
    const now = this.clock();
    const inserted = this.sql(
        `INSERT INTO incidents (id, timer_id, user_id, status, deadline, created_at, updated_at, location_name, lat, lng, display_name, fence)
         VALUES (@id, @timerId, @userId, 'active', @deadline, @now, @now, @locationName, @lat, @lng, @displayName, @fence)
         ON CONFLICT (timer_id) DO NOTHING RETURNING *`,
      )
      .get({
        id,
        timerId: timer.id,
        userId: timer.userId,
        deadline: timer.expiresAt.getTime(),
        now,
        locationName: timer.locationName ?? null,
        lat: timer.location?.lat ?? null,
        lng: timer.location?.lng ?? null,
        displayName: timer.displayName ?? null,
        fence,
      }) as IncidentRow | undefined;
    if (inserted) return { incident: toIncident(inserted), created: true };
    const existing = this.sql('SELECT * FROM incidents WHERE timer_id = ?').get(timer.id) as IncidentRow;
    return { incident: toIncident(existing), created: false };
  }

  async getIncident(id: string): Promise<Incident | null> {
    const row = this.sql('SELECT * FROM incidents WHERE id = ?').get(id) as IncidentRow | undefined;
    return row ? toIncident(row) : null;
  }

  async incidentForTimer(timerId: string): Promise<Incident | null> {
    const row = this.sql('SELECT * FROM incidents WHERE timer_id = ?').get(timerId) as IncidentRow | undefined;
    return row ? toIncident(row) : null;
  }

  async listIncidents(filter: { status?: IncidentStatus } & ChangedSince = {}): Promise<Incident[]> {
    const where = ['1 = 1'];
    if (filter.status) where.push('status = @status');
    if (filter.since) where.push('updated_at > @since');
    const order = filter.since ? 'updated_at ASC' : 'created_at ASC, id ASC';
    const rows = this.sql(`SELECT * FROM incidents WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT @limit`)
      .all({ status: filter.status ?? null, since: filter.since?.getTime() ?? null, limit: filter.limit ?? 500 }) as IncidentRow[];
    return rows.map(toIncident);
  }

  async transitionIncident(id: string, from: readonly IncidentStatus[], to: IncidentStatus, by: string): Promise<Incident | null> {
    const stamp =
      to === 'acknowledged'
        ? 'acknowledged_at = @now, acknowledged_by = @by'
        : 'resolved_at = @now, resolved_by = @by';
    const row = this.sql(
        `UPDATE incidents SET status = @to, updated_at = @now, ${stamp}
         WHERE id = @id AND status IN (${inList(from)}) RETURNING *`,
      )
      .get({ id, to, by, now: this.clock() }) as IncidentRow | undefined;
    return row ? toIncident(row) : null;
  }

  // ── deliveries ──────────────────────────────────────────────────────────────

  async addDeliveries(incident: Incident, list: NewDelivery[]): Promise<Delivery[]> {
    const now = this.clock();
    const insert = this.sql(
      `INSERT INTO deliveries (key, incident_id, user_id, contact_id, contact_name, phone, kind, body, status, attempts, next_attempt_at, created_at, updated_at)
       VALUES (@key, @incidentId, @userId, @contactId, @contactName, @phone, @kind, @body, 'pending', 0, @now, @now, @now)
       ON CONFLICT DO NOTHING`,
    );
    this.db
      .transaction(() => {
        for (const d of list) insert.run({ ...d, incidentId: incident.id, userId: incident.userId, now });
      })
      .immediate();
    const rows = this.sql('SELECT * FROM deliveries WHERE incident_id = ? ORDER BY created_at, key').all(incident.id) as DeliveryRow[];
    return rows.map(toDelivery);
  }

  async deliveriesFor(incidentIds: string[]): Promise<Delivery[]> {
    if (incidentIds.length === 0) return [];
    const out: Delivery[] = [];
    // bounded IN lists keep statements small for large boards
    for (let i = 0; i < incidentIds.length; i += 500) {
      const chunk = incidentIds.slice(i, i + 500);
      const rows = this.db
        .prepare(`SELECT * FROM deliveries WHERE incident_id IN (${chunk.map(() => '?').join(',')}) ORDER BY created_at, key`)
        .all(...chunk) as DeliveryRow[];
      out.push(...rows.map(toDelivery));
    }
    return out;
  }

  async getDelivery(key: string): Promise<Delivery | null> {
    const row = this.sql('SELECT * FROM deliveries WHERE key = ?').get(key) as DeliveryRow | undefined;
    return row ? toDelivery(row) : null;
  }

  async claimDeliveries(limit: number, leaseMs: number): Promise<Delivery[]> {
    const due = "((status = 'pending' AND next_attempt_at <= @now) OR (status = 'sending' AND lease_until <= @now))";
    const rows = this.sql(
        `UPDATE deliveries SET status = 'sending', attempts = attempts + 1, lease_until = @now + @leaseMs, updated_at = @now
         WHERE key IN (SELECT key FROM deliveries WHERE ${due} ORDER BY next_attempt_at LIMIT @limit) AND ${due}
         RETURNING *`,
      )
      .all({ now: this.clock(), leaseMs, limit }) as DeliveryRow[];
    return rows.map(toDelivery);
  }

  async recordAttempt(key: string, attempt: number, o: DeliveryOutcome): Promise<Delivery | null> {
    const row = this.sql(
        `UPDATE deliveries SET status = @status, carrier = @carrier,
           provider_message_id = COALESCE(@providerMessageId, provider_message_id), last_error = @error,
           next_attempt_at = COALESCE(@next, next_attempt_at), lease_until = NULL, updated_at = @now
         WHERE key = @key AND status = 'sending' AND attempts = @attempt RETURNING *`,
      )
      .get({
        key,
        attempt,
        status: o.status,
        carrier: o.carrier,
        providerMessageId: o.providerMessageId ?? null,
        error: o.error ?? null,
        next: o.nextAttemptAt?.getTime() ?? null,
        now: this.clock(),
      }) as DeliveryRow | undefined;
    return row ? toDelivery(row) : null;
  }

  async applyReceipt(providerMessageId: string, to: 'sent' | 'delivered' | 'failed', from: readonly DeliveryStatus[]): Promise<Delivery | null> {
    if (from.length === 0) return null;
    const row = this.sql(
        `UPDATE deliveries SET status = @to, updated_at = @now
         WHERE provider_message_id = @pid AND status IN (${inList(from)}) RETURNING *`,
      )
      .get({ pid: providerMessageId, to, now: this.clock() }) as DeliveryRow | undefined;
    return row ? toDelivery(row) : null;
  }

  async countDeliveriesSince(userId: string, since: Date): Promise<number> {
    const r = this.sql('SELECT COUNT(*) AS n FROM deliveries WHERE user_id = ? AND created_at > ?')
      .get(userId, since.getTime()) as { n: number };
    return r.n;
  }

  async deliveryBacklog(): Promise<{ pending: number; oldestDue?: Date; dead: number }> {
    const p = this.sql("SELECT COUNT(*) AS n, MIN(next_attempt_at) AS oldest FROM deliveries WHERE status IN ('pending','sending')")
      .get() as { n: number; oldest: number | null };
    const d = this.sql("SELECT COUNT(*) AS n FROM deliveries WHERE status = 'dead'").get() as { n: number };
    return p.oldest === null ? { pending: p.n, dead: d.n } : { pending: p.n, oldestDue: new Date(p.oldest), dead: d.n };
  }

  // ── contacts ────────────────────────────────────────────────────────────────

  async getContacts(userId: string): Promise<Contact[]> {
    const rows = this.sql('SELECT id, name, phone FROM contacts WHERE user_id = ? ORDER BY position').all(userId) as ContactRow[];
    return rows.map(toContact);
  }

  async replaceContacts(userId: string, contacts: Contact[]): Promise<Contact[]> {
    const del = this.sql('DELETE FROM contacts WHERE user_id = ?');
    const ins = this.sql('INSERT INTO contacts (user_id, position, id, name, phone) VALUES (?, ?, ?, ?, ?)');
    this.db
      .transaction(() => {
        del.run(userId);
        contacts.forEach((c, i) => ins.run(userId, i, c.id, c.name, c.phone));
      })
      .immediate();
    return this.getContacts(userId);
  }
}
