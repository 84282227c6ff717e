/**
 * Moderator actions and retention on the SQLite store. Each action and its audit line are
 * one IMMEDIATE transaction: the change is never recorded without its line, nor the line
 * without the change. Retention is one transaction per batch.
 */
import type Database from 'better-sqlite3';
import type { Delivery } from '../../domain/delivery.js';
import { maskPhone } from '../../domain/messages.js';
import { auditId, type AuditAction, type AuditEntry, type IncidentNote, type RetentionCounts } from '../../domain/moderation.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import type { AuditPosition, ModerationStore, NewNote } from '../port-moderation.js';
import { prepareModeration, type ModerationStatements } from './moderation-statements.js';
import { toDelivery, type DeliveryRow } from './rows.js';

interface AuditRow {
  id: string;
  at: number;
  actor: string;
  action: AuditAction;
  target: string;
  incident_id: string;
}

interface NoteRow {
  id: string;
  incident_id: string;
  author: string;
  text: string;
  created_at: number;
  redacted_at: number | null;
}

const toAudit = (r: AuditRow): AuditEntry => ({
  id: r.id,
  at: new Date(r.at),
  actor: r.actor,
  action: r.action,
  target: r.target,
  incidentId: r.incident_id,
});

const toNote = (r: NoteRow): IncidentNote => ({
  id: r.id,
  incidentId: r.incident_id,
  author: r.author,
  text: r.text,
  createdAt: new Date(r.created_at),
  ...(r.redacted_at === null ? {} : { redactedAt: new Date(r.redacted_at) }),
});

export class SqliteModeration implements ModerationStore {
  private readonly st: ModerationStatements;

  constructor(
    private readonly db: Database.Database,
    private readonly clock: () => number,
  ) {
    this.st = prepareModeration(db);
  }

  private audit(id: string, actor: string, action: AuditAction, target: string, incidentId: string, at: number): void {
    this.st.auditInsert.run({ id, at, actor, action, target, incidentId });
  }

  async resendDelivery(key: string, actor: string): Promise<Delivery | null> {
    const run = this.db.transaction((): Delivery | null => {
      const now = this.clock();
      const row = this.st.deliveryResend.get({ key, now }) as DeliveryRow | undefined;
      if (!row) return null;
      const d = toDelivery(row);
      this.audit(auditId.resend(key, d.resends ?? 1), actor, 'delivery.resend', key, d.incidentId, now);
      return d;
    });
    return run.immediate();
  }

  async cancelPendingDeliveries(incidentId: string, actor: string): Promise<Delivery[]> {
    const run = this.db.transaction((): Delivery[] => {
      const now = this.clock();
      const moved = (this.st.deliveriesCancelPending.all({ incidentId, now }) as DeliveryRow[]).map(toDelivery);
      for (const d of moved) this.audit(auditId.cancel(d.key), actor, 'delivery.cancel', d.key, incidentId, now);
      return moved;
    });
    return run.immediate();
  }

  async addIncidentNote(n: NewNote): Promise<{ note: IncidentNote; created: boolean }> {
    const run = this.db.transaction((): { note: IncidentNote; created: boolean } => {
      const now = this.clock();
      const row = this.st.noteInsert.get({ ...n, now }) as NoteRow | undefined;
      if (!row) return { note: toNote(this.st.noteById.get(n.id) as NoteRow), created: false };
      this.audit(auditId.note(n.id), n.author, 'incident.note', n.incidentId, n.incidentId, now);
      this.st.incidentTouch.run(n.incidentId);
      return { note: toNote(row), created: true };
    });
    return run.immediate();
  }

  async notesFor(incidentIds: string[]): Promise<IncidentNote[]> {
    const out: IncidentNote[] = [];
    for (let i = 0; i < incidentIds.length; i += PAGE_SIZE) {
      const rows = this.st.notesOfIncidents.all(JSON.stringify(incidentIds.slice(i, i + PAGE_SIZE))) as NoteRow[];
      out.push(...rows.map(toNote));
    }
    return out;
  }

  async listAudit(page: { before?: AuditPosition; limit: number }): Promise<AuditEntry[]> {
    const rows = page.before
      ? this.st.auditBefore.all({ at: page.before.at.getTime(), id: page.before.id, limit: page.limit })
      : this.st.auditNewest.all({ limit: page.limit });
    return (rows as AuditRow[]).map(toAudit);
  }

  async redactClosed(before: Date, limit: number): Promise<RetentionCounts> {
    const run = this.db.transaction((): RetentionCounts => {
      const now = this.clock();
      const b = { before: before.getTime(), limit, now };
      // deliveries and notes first: they are found through their incident, whatever its own state
      const candidates = this.st.retentionDeliveryCandidates.all(b) as { key: string; phone: string }[];
      let deliveries = 0;
      for (const c of candidates) deliveries += this.st.retentionDelivery.run({ key: c.key, masked: maskPhone(c.phone), now }).changes;
      const notes = this.st.retentionNotes.all(b).length;
      const incidents = this.st.retentionIncidents.all(b).length;
      const timers = this.st.retentionTimers.all(b).length;
      const fixes = this.st.retentionFixes.run({ limit }).changes;
      return { timers, incidents, deliveries, notes, fixes };
    });
    return run.immediate();
  }
}
