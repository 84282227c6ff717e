/** The wire shape of moderator notes and audit lines (moderators only: they name moderators). */
import type { AuditEntry, IncidentNote } from '../domain/moderation.js';

export function noteView(n: IncidentNote) {
  return {
    id: n.id,
    incidentId: n.incidentId,
    author: n.author,
    text: n.text,
    createdAt: n.createdAt.toISOString(),
    redactedAt: n.redactedAt?.toISOString(),
  };
}

export function auditView(a: AuditEntry) {
  return {
    id: a.id,
    at: a.at.toISOString(),
    actor: a.actor,
    action: a.action,
    target: a.target,
    incidentId: a.incidentId,
    person: a.person,
    reason: a.reason,
  };
}
