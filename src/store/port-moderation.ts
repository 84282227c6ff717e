/**
 * Store port for moderator actions on texts and for retention. Each action and its audit
 * line are one write where the store can (SQLite: one transaction); where it cannot
 * (MongoDB: the audit line follows the CAS) the line's id is derived from the fact it records,
 * so writing it again — a repeated request — keeps one line and fills a missing one.
 */
import type { Delivery } from '../domain/delivery.js';
import type { Incident } from '../domain/incident.js';
import type { AuditEntry, AuditFilter, IncidentNote, NewAuditLine, RetentionCounts } from '../domain/moderation.js';

export interface NewNote {
  /** derived from the moderator and their Idempotency-Key when given, so a retry finds the same note */
  id: string;
  incidentId: string;
  author: string;
  text: string;
  /** the person of the incident (named in the audit line) */
  person: string;
}

/** Keyset position in the audit, newest first: lines strictly older than `(at, id)`. */
export interface AuditPosition {
  at: Date;
  id: string;
}

export interface ModerationStore {
  /**
   * CAS dead | failed → pending, due now, attempts reset, `resends` + 1, never a delivery retention
   * anonymised; its message id becomes an earlier one (`earlierMessageIds`: receipts about it no
   * longer move the delivery, whose next attempt sends a new message); records the audit line `resend:<key>:<resends>`. `null` when it was in no such state
   * (a repeat of a resend that applied finds it pending or sending and writes that line again, idempotently).
   */
  resendDelivery(key: string, actor: string): Promise<Delivery | null>;
  /**
   * CAS pending → superseded (lastError `cancelled_by_moderator`) for every pending delivery of the
   * incident; a claimed (sending) one is left alone. One audit line `cancel:<key>` per delivery moved.
   */
  cancelPendingDeliveries(incidentId: string, actor: string): Promise<Delivery[]>;
  /** Add a note to an incident (with its audit line), or return the note that already has this id. */
  addIncidentNote(note: NewNote): Promise<{ note: IncidentNote; created: boolean }>;
  /** Notes of these incidents, oldest first. */
  notesFor(incidentIds: string[]): Promise<IncidentNote[]>;
  /** Audit lines newest first, strictly before `before` when given; only those matching every field of `filter`. */
  listAudit(page: { before?: AuditPosition; limit: number; filter?: AuditFilter }): Promise<AuditEntry[]>;
  /**
   * Record a moderator's read of a person's data (one line per request, its id fresh), before
   * the data is read: a read whose line cannot be written is not served. Several lines (a read of
   * many incidents at once: one per incident) are one write.
   */
  recordAccess(lines: NewAuditLine[]): Promise<void>;
  /** The person's open (active or acknowledged) incident, if any: a moderator may look at their timers without a stated reason. */
  openIncidentOf(userId: string): Promise<Incident | null>;
  /**
   * Retention, one bounded batch per kind: timers closed before `before` (safe, cancelled, or
   * expired with the escalation done or never needed) and whose incident, if any, is closed lose
   * their place, coordinates and display name; incidents closed before `before` (their all-clear
   * done) lose the same; their deliveries that are final get a masked number, no text and no
   * contact name; their notes lose their text. Open incidents and live timers are never touched;
   * a record is anonymised once (`redactedAt`). Returns how many records of each kind changed.
   * The meeting details go with the place, and the location trail of an anonymised timer is deleted (`fixes`).
   */
  redactClosed(before: Date, limit: number): Promise<RetentionCounts>;
}
