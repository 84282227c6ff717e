/**
 * Moderator actions on texts (resend, cancel, notes), their audit trail, and retention.
 * Pure rules: what may be resent, what a note may contain, how a stored number is masked.
 */
import { allClearStep, type Delivery } from './delivery.js';
import type { Incident, IncidentStatus } from './incident.js';
import type { Timer } from './timer.js';

/**
 * What a moderator did or read; one audit line per action and record, one per request for a read
 * (`*.read`: what a moderator saw of a person's data).
 */
export const AUDIT_ACTIONS = [
  'delivery.resend',
  'delivery.cancel',
  'incident.note',
  'user.revoke_tokens',
  'incident.acknowledge',
  'incident.resolve',
  'escalation.retry',
  'incident.read',
  'trail.read',
  'timers.read',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** The reads a moderator makes of a person's data: recorded before the data is read (one line per request). */
export type AccessAction = Extract<AuditAction, 'incident.read' | 'trail.read' | 'timers.read'>;

/** A longest stated reason for looking at a person's timers (`timers.read` without an open incident). */
export const REASON_MAX_CHARS = 500;

export interface AuditEntry {
  /** stable per fact (`resend:<key>:<n>`, `cancel:<key>`, `note:<noteId>`, `revoke:<userId>:<stampMs>`): writing it twice keeps one line */
  id: string;
  at: Date;
  /** the moderator's `sub` */
  actor: string;
  action: AuditAction;
  /** what it was done on: a delivery key, an incident id, or a person (`user.revoke_tokens`) */
  target: string;
  /** the incident it concerns; none for an action on a person (`user.revoke_tokens`, `timers.read`) */
  incidentId?: string;
  /** whose data it concerns (the person of the incident, the timer, the tokens); a pseudonym once they erased their data */
  person?: string;
  /** why the moderator looked (required to read a person's timers while they have no open incident) */
  reason?: string;
}

/** Which lines to list: every given field must match. */
export interface AuditFilter {
  actor?: string;
  person?: string;
  incidentId?: string;
}

/** A line to record; its time is the store's. */
export type NewAuditLine = Omit<AuditEntry, 'at'>;

export interface IncidentNote {
  id: string;
  incidentId: string;
  /** the moderator's `sub` */
  author: string;
  /** empty once removed by retention */
  text: string;
  createdAt: Date;
  /** set when retention removed the text */
  redactedAt?: Date;
}

/** `lastError` of a delivery a moderator cancelled: it is `superseded` (final, never sent) with this reason. */
export const CANCELLED_BY_MODERATOR = 'cancelled_by_moderator';

export const auditId = {
  resend: (key: string, resends: number) => `resend:${key}:${resends}`,
  cancel: (key: string) => `cancel:${key}`,
  note: (noteId: string) => `note:${noteId}`,
  revoke: (userId: string, stamp: Date) => `revoke:${userId}:${stamp.getTime()}`,
  acknowledge: (incidentId: string) => `ack:${incidentId}`,
  resolve: (incidentId: string) => `resolve:${incidentId}`,
  retry: (timerId: string, at: Date) => `retry:${timerId}:${at.getTime()}`,
  /** a read is its own fact: one line per request, named by a fresh id */
  read: (requestId: string) => `read:${requestId}`,
};

/** The audit line of a moderator's acknowledge or resolve of `incident` (moved to `to` by `by`). */
export function moderatorStep(incident: Incident, to: IncidentStatus, by: string): NewAuditLine {
  const acknowledge = to === 'acknowledged';
  return {
    id: acknowledge ? auditId.acknowledge(incident.id) : auditId.resolve(incident.id),
    actor: by,
    action: acknowledge ? 'incident.acknowledge' : 'incident.resolve',
    target: incident.id,
    incidentId: incident.id,
    person: incident.userId,
  };
}

/** The audit line of a moderator's retry of a dead-lettered escalation, at `at` (store clock). */
export function retryLine(t: Timer, actor: string, at: Date): NewAuditLine {
  return {
    id: auditId.retry(t.id, at),
    actor,
    action: 'escalation.retry',
    target: t.id,
    person: t.userId,
    ...(t.incidentId === undefined ? {} : { incidentId: t.incidentId }),
  };
}

/**
 * Why a moderator may not send this delivery again, or `null` when they may. Only a dead or
 * failed text is resent; an SOS of a false alarm is never resent (the person is safe), nor an
 * all-clear whose SOS never reached the contact (it would announce an alarm they never got).
 * A pending or sending delivery is already on its way: the caller answers it as it is.
 */
export type ResendRefusal =
  | { code: 'delivery_redacted'; message: string }
  | { code: 'delivery_not_resendable'; message: string }
  | { code: 'incident_false_alarm'; message: string }
  | { code: 'sos_not_sent'; message: string };

export function resendRefusal(d: Delivery, incident: Incident | null, sos: Delivery | null): ResendRefusal | null {
  if (d.redactedAt) return { code: 'delivery_redacted', message: 'this delivery was anonymised by retention and cannot be sent again' };
  if (d.status !== 'dead' && d.status !== 'failed')
    return { code: 'delivery_not_resendable', message: `only a dead or failed delivery can be resent; this one is ${d.status}` };
  if (d.kind === 'sos' && incident?.status === 'false_alarm')
    return { code: 'incident_false_alarm', message: 'the person checked in (false alarm): their SOS is not sent again' };
  if (d.kind === 'all_clear' && allClearStep(sos) !== 'send')
    return {
      code: 'sos_not_sent',
      message: 'the SOS to this contact has not gone out (or its outcome is not known yet): there is nothing to clear',
    };
  return null;
}

/** A resend that already happened: the delivery is on its way again (natural idempotency of the command). */
export const alreadyResent = (d: Delivery): boolean => (d.resends ?? 0) > 0 && (d.status === 'pending' || d.status === 'sending');

export const NOTE_MAX_CHARS = 2000;

// C0/C1 controls except tab and newline, bidi embeddings/overrides/isolates and marks,
// zero-width characters, line/paragraph separators: a note is plain text that reads as it is.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const NOTE_UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/u;

/** Why a note text is refused, or `null` (length in UTF-16 code units, as JSON Schema counts). The text is kept as sent. */
export function noteProblem(text: string): string | null {
  if (text.trim().length === 0) return 'a note cannot be empty';
  if (text.length > NOTE_MAX_CHARS) return `a note has at most ${NOTE_MAX_CHARS} characters`;
  if (NOTE_UNSAFE.test(text)) return 'a note is plain text: control, bidirectional and zero-width characters are not allowed';
  return null;
}

/** Why a stated reason for a read is refused, or `null`: plain text, as a note, at most REASON_MAX_CHARS. */
export function reasonProblem(reason: string): string | null {
  if (reason.trim().length === 0) return 'a reason cannot be empty';
  if (reason.length > REASON_MAX_CHARS) return `a reason has at most ${REASON_MAX_CHARS} characters`;
  if (NOTE_UNSAFE.test(reason)) return 'a reason is plain text: control, bidirectional and zero-width characters are not allowed';
  return null;
}

/** Records one retention batch anonymised, by kind (the metric label). */
export interface RetentionCounts {
  timers: number;
  incidents: number;
  deliveries: number;
  /** location fixes deleted (the trail of an anonymised timer) */
  fixes: number;
  notes: number;
  /** inbox entries deleted (recorded before the cut-off) */
  notifications: number;
}
export const RETENTION_KINDS = [
  'timers',
  'incidents',
  'deliveries',
  'notes',
  'fixes',
  'notifications',
] as const satisfies readonly (keyof RetentionCounts)[];
