/**
 * Moderator actions and retention on the SQLite store. Each action and its audit line are
 * one IMMEDIATE transaction: the change is never recorded without its line, nor the line
 * without the change. Retention is one transaction per batch. SQL in ./moderation-statements.ts.
 */
import type { Delivery } from '../../domain/delivery.js';
import type { Incident } from '../../domain/incident.js';
import { maskPhone } from '../../domain/messages.js';
import {
  auditId,
  type AuditAction,
  type AuditEntry,
  type AuditFilter,
  type IncidentNote,
  type NewAuditLine,
  type RetentionCounts,
} from '../../domain/moderation.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import type { AuditPosition, NewNote } from '../port-moderation.js';
import { read, write, type Ctx } from './ctx.js';
import { toDelivery, toIncident, type DeliveryRow, type IncidentRow } from './rows.js';

interface AuditRow {
  id: string;
  at: number;
  actor: string;
  action: AuditAction;
  target: string;
  incident_id: string | null;
  person: string | null;
  reason: string | null;
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
  ...(r.incident_id === null ? {} : { incidentId: r.incident_id }),
  ...(r.person === null ? {} : { person: r.person }),
  ...(r.reason === null ? {} : { reason: r.reason }),
});

const toNote = (r: NoteRow): IncidentNote => ({
  id: r.id,
  incidentId: r.incident_id,
  author: r.author,
  text: r.text,
  createdAt: new Date(r.created_at),
  ...(r.redacted_at === null ? {} : { redactedAt: new Date(r.redacted_at) }),
});

/** Record one audit line at `at` (store clock); inside the caller's transaction, so it lands with the action or not at all. */
export function auditRow(c: Ctx, line: NewAuditLine, at: number): void {
  c.st.auditInsert.run({
    id: line.id,
    at,
    actor: line.actor,
    action: line.action,
    target: line.target,
    incidentId: line.incidentId ?? null,
    person: line.person ?? null,
    reason: line.reason ?? null,
  });
}

function audit(
  c: Ctx,
  id: string,
  actor: string,
  action: AuditAction,
  target: string,
  incidentId: string,
  person: string,
  at: number,
): void {
  auditRow(c, { id, actor, action, target, incidentId, person }, at);
}

export const resendDelivery = write((c, key: string, actor: string): Delivery | null => {
  const run = c.db.transaction((): Delivery | null => {
    const now = c.clock();
    const row = c.st.deliveryResend.get({ key, now }) as DeliveryRow | undefined;
    if (!row) return null;
    const d = toDelivery(row);
    audit(c, auditId.resend(key, d.resends ?? 1), actor, 'delivery.resend', key, d.incidentId, d.userId, now);
    return d;
  });
  return run.immediate();
});

export const cancelPendingDeliveries = write((c, incidentId: string, actor: string): Delivery[] => {
  const run = c.db.transaction((): Delivery[] => {
    const now = c.clock();
    const moved = (c.st.deliveriesCancelPending.all({ incidentId, now }) as DeliveryRow[]).map(toDelivery);
    for (const d of moved) audit(c, auditId.cancel(d.key), actor, 'delivery.cancel', d.key, incidentId, d.userId, now);
    return moved;
  });
  return run.immediate();
});

export const addIncidentNote = write((c, n: NewNote): { note: IncidentNote; created: boolean } => {
  const run = c.db.transaction((): { note: IncidentNote; created: boolean } => {
    const now = c.clock();
    const row = c.st.noteInsert.get({ ...n, now }) as NoteRow | undefined;
    if (!row) return { note: toNote(c.st.noteById.get(n.id) as NoteRow), created: false };
    audit(c, auditId.note(n.id), n.author, 'incident.note', n.incidentId, n.incidentId, n.person, now);
    c.st.incidentTouch.run(n.incidentId);
    return { note: toNote(row), created: true };
  });
  return run.immediate();
});

export const notesFor = read((c, incidentIds: string[]): IncidentNote[] => {
  const out: IncidentNote[] = [];
  for (let i = 0; i < incidentIds.length; i += PAGE_SIZE) {
    const rows = c.st.notesOfIncidents.all(JSON.stringify(incidentIds.slice(i, i + PAGE_SIZE))) as NoteRow[];
    out.push(...rows.map(toNote));
  }
  return out;
});

export const listAudit = read((c, page: { before?: AuditPosition; limit: number; filter?: AuditFilter }): AuditEntry[] => {
  const f = page.filter ?? {};
  const params = { actor: f.actor ?? null, person: f.person ?? null, incidentId: f.incidentId ?? null, limit: page.limit };
  // the most selective filter given leads (its index); the others are checked on its lines
  const [newest, before] =
    f.incidentId !== undefined
      ? [c.st.auditByIncidentNewest, c.st.auditByIncidentBefore]
      : f.person !== undefined
        ? [c.st.auditByPersonNewest, c.st.auditByPersonBefore]
        : f.actor !== undefined
          ? [c.st.auditByActorNewest, c.st.auditByActorBefore]
          : [c.st.auditAllNewest, c.st.auditAllBefore];
  const rows = page.before ? before.all({ ...params, at: page.before.at.getTime(), id: page.before.id }) : newest.all(params);
  return (rows as AuditRow[]).map(toAudit);
});

export const recordAccess = write((c, lines: NewAuditLine[]): void => {
  const run = c.db.transaction((): void => {
    const now = c.clock();
    for (const l of lines) auditRow(c, l, now);
  });
  run.immediate();
});

export const openIncidentOf = read((c, userId: string): Incident | null => {
  const row = c.st.incidentOpenOfUser.get(userId) as IncidentRow | undefined;
  return row ? toIncident(row) : null;
});

export const redactClosed = write((c, before: Date, limit: number): RetentionCounts => {
  const run = c.db.transaction((): RetentionCounts => {
    const now = c.clock();
    const b = { before: before.getTime(), limit, now };
    // deliveries and notes first: they are found through their incident, whatever its own state
    const candidates = c.st.retentionDeliveryCandidates.all(b) as { key: string; phone: string }[];
    let deliveries = 0;
    for (const x of candidates) deliveries += c.st.retentionDelivery.run({ key: x.key, masked: maskPhone(x.phone), now }).changes;
    const notes = c.st.retentionNotes.all(b).length;
    const incidents = c.st.retentionIncidents.all(b).length;
    const timers = c.st.retentionTimers.all(b).length;
    const fixes = c.st.retentionFixes.run({ limit }).changes;
    const notifications = c.st.retentionNotifications.run({ before: b.before, limit }).changes;
    return { timers, incidents, deliveries, notes, fixes, notifications };
  });
  return run.immediate();
});
