/**
 * Moderator actions on texts: resend a dead or failed delivery, cancel pending ones, add a
 * note. Each is one CAS in the store with its audit line, then an event. Resend and cancel
 * are naturally idempotent (a repeat finds the work done and answers the state as it is);
 * a note is idempotent per Idempotency-Key (the key names the note).
 */
import { createHash, randomUUID } from 'node:crypto';
import { deliveryKey, type Delivery } from '../domain/delivery.js';
import { Conflict, DomainError, Invalid, NotFound } from '../domain/errors.js';
import type { Incident } from '../domain/incident.js';
import { maskPhone } from '../domain/messages.js';
import { alreadyResent, noteProblem, resendRefusal, type AuditEntry, type AuditFilter, type IncidentNote } from '../domain/moderation.js';
import type { Metrics } from '../metrics.js';
import { deliveryEvent, noteEvent, type EventPublisher } from '../realtime/events.js';
import type { Store } from '../store/port.js';
import type { AuditPosition } from '../store/port-moderation.js';

export class ModerationService {
  constructor(
    private readonly store: Store,
    private readonly events: EventPublisher,
    private readonly metrics: Metrics,
  ) {}

  /**
   * Send a dead or failed delivery again. Pending or sending: already on its way, answered as
   * it is (`resent: false`) — a repeated resend adds no second audit line.
   */
  async resend(key: string, actor: string): Promise<{ delivery: Delivery; resent: boolean }> {
    for (let i = 0; i < 3; i++) {
      const d = await this.store.getDelivery(key);
      if (!d) throw NotFound('delivery_not_found', `no delivery ${key}`);
      if (d.status === 'pending' || d.status === 'sending') {
        // a repeat of a resend that applied: the store writes its audit line again if it was lost
        if (alreadyResent(d)) await this.store.resendDelivery(key, actor);
        return { delivery: (await this.store.getDelivery(key)) ?? d, resent: false };
      }
      const [incident, sos] = await Promise.all([
        this.store.getIncident(d.incidentId),
        d.kind === 'all_clear' ? this.store.getDelivery(deliveryKey(d.incidentId, d.contactId, 'sos')) : Promise.resolve(null),
      ]);
      const refusal = resendRefusal(d, incident, sos);
      if (refusal) throw Conflict(refusal.code, refusal.message, { status: d.status });
      const moved = await this.store.resendDelivery(key, actor);
      if (moved) {
        this.metrics.moderatorActions.inc({ action: 'resend' });
        this.events.publish(deliveryEvent(moved, maskPhone));
        return { delivery: moved, resent: true };
      }
      // it changed between our read and the CAS (a receipt, another moderator): decide again
      this.metrics.casConflicts.inc({ command: 'resend' });
    }
    throw Conflict('delivery_busy', 'the delivery kept changing; try again');
  }

  /** Cancel the incident's pending deliveries (never a claimed one); returns those cancelled now. */
  async cancelPending(incidentId: string, actor: string): Promise<Delivery[]> {
    await this.incident(incidentId);
    const moved = await this.store.cancelPendingDeliveries(incidentId, actor);
    if (moved.length > 0) this.metrics.moderatorActions.inc({ action: 'cancel' }, moved.length);
    for (const d of moved) this.events.publish(deliveryEvent(d, maskPhone));
    return moved;
  }

  /** Add a note; with an Idempotency-Key a retry returns the same note (another text under the key: 422). */
  async addNote(
    incidentId: string,
    actor: string,
    text: string,
    idempotencyKey?: string,
  ): Promise<{ note: IncidentNote; created: boolean }> {
    const problem = noteProblem(text);
    if (problem) throw Invalid('note_invalid', problem);
    const incident = await this.incident(incidentId);
    if (incident.redactedAt) throw Conflict('incident_redacted', 'this incident was anonymised by retention; it takes no new notes');
    const id =
      idempotencyKey === undefined
        ? `note_${randomUUID()}`
        : `note_${createHash('sha256').update(`${actor}\u0000${incidentId}\u0000${idempotencyKey}`).digest('hex').slice(0, 32)}`;
    const r = await this.store.addIncidentNote({ id, incidentId, author: actor, text, person: incident.userId });
    if (!r.created && r.note.text !== text)
      throw new DomainError('idempotency_mismatch', 'idempotency_mismatch', 'this Idempotency-Key was already used for another note');
    if (r.created) {
      this.metrics.moderatorActions.inc({ action: 'note' });
      const after = (await this.store.getIncident(incidentId)) ?? incident;
      this.events.publish(noteEvent(after, r.note));
    }
    return r;
  }

  audit(page: { before?: AuditPosition; limit: number; filter?: AuditFilter }): Promise<AuditEntry[]> {
    return this.store.listAudit(page);
  }

  private async incident(id: string): Promise<Incident> {
    const i = await this.store.getIncident(id);
    if (!i) throw NotFound('incident_not_found', `no incident ${id}`);
    return i;
  }
}
