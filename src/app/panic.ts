/**
 * The panic button: `POST /v1/sos`. The store decides atomically what the press becomes
 * (store/port-safety.ts: a new incident, the person's live timer taken over, or attached to
 * the open incident); this completes it: SOS texts (the same budget and keys as a timer SOS,
 * so a contact is never texted twice for one incident) and the events.
 *
 * A live timer taken over by the panic is expired with its escalation pending, so if this
 * request dies half-way the sweep completes it like any expired timer (invariant 4); it is
 * marked done here once the texts are queued.
 */
import { deliveryKey } from '../domain/delivery.js';
import { DomainError } from '../domain/errors.js';
import type { Incident } from '../domain/incident.js';
import { panicMessage } from '../domain/panic-message.js';
import type { GeoPoint, Timer } from '../domain/timer.js';
import type { Metrics } from '../metrics.js';
import { incidentSourcesEvent, sosEvent, timerEvent, type EventPublisher } from '../realtime/events.js';
import type { PanicKey } from '../store/port-safety.js';
import type { Store } from '../store/port.js';
import { noTracing, type Tracing } from '../telemetry/tracing.js';
import type { Caller } from './timers.js';
import { newId } from './ids.js';
import type { SmsBudget } from './sms-budget.js';

export interface PanicInput {
  location?: GeoPoint;
  locationName?: string;
  /** a short line from the person, added to the SOS text */
  note?: string;
}

export type PanicOutcome = 'created' | 'attached' | 'replayed';

const idempotencyMismatch = () =>
  new DomainError('idempotency_mismatch', 'idempotency_key_reused', 'this Idempotency-Key was used with a different SOS request');

export class PanicService {
  constructor(
    private readonly store: Store,
    private readonly events: EventPublisher,
    private readonly metrics: Metrics,
    private readonly smsBudget: SmsBudget,
    private readonly tracing: Tracing = noTracing(),
  ) {}

  async raise(caller: Caller, input: PanicInput, idem?: PanicKey): Promise<{ incident: Incident; outcome: PanicOutcome }> {
    const r = await this.store.raisePanic(
      {
        incidentId: newId('inc'),
        userId: caller.userId,
        displayName: caller.displayName,
        locationName: input.locationName,
        location: input.location,
      },
      idem,
    );
    switch (r.kind) {
      case 'idempotency_mismatch':
        throw idempotencyMismatch();
      case 'replayed':
        // a retry after a failure half-way completes the texts (keyed per contact: nobody gets two)
        if (r.incident.panicTexts === 'pending') await this.complete(r.incident, input);
        return { incident: r.incident, outcome: 'replayed' };
      case 'attached':
        if (r.timer) this.events.publish(timerEvent('timer.expired', r.timer));
        if (r.sourceAdded) this.events.publish(incidentSourcesEvent(r.incident));
        return { incident: r.incident, outcome: 'attached' };
      case 'created':
        if (r.timer) {
          await this.text(r.incident, input);
          await this.completeTimer(r.timer, r.incident);
          this.events.publish(sosEvent(r.incident));
        } else await this.complete(r.incident, input);
        this.metrics.escalated.inc();
        return { incident: r.incident, outcome: 'created' };
    }
  }

  /**
   * Crash repair, run by the sweep: panic incidents whose texts were left pending (the request
   * died between opening the incident and queueing the texts). Never throws; how many it completed.
   */
  async repair(limit: number, onError: (err: unknown, incidentId: string) => void): Promise<number> {
    let done = 0;
    for (const incident of await this.store.pendingPanicTexts(limit)) {
      try {
        await this.complete(incident, {});
        done++;
      } catch (err) {
        onError(err, incident.id);
      }
    }
    return done;
  }

  /** A panic incident of its own: texts (unless it is already closed), `sos.triggered`, then the outbox is done. */
  private async complete(incident: Incident, input: PanicInput): Promise<void> {
    if (incident.status === 'active' || incident.status === 'acknowledged') await this.text(incident, input);
    this.events.publish(sosEvent(incident));
    await this.store.markPanicTexted(incident.id);
  }

  private async text(incident: Incident, input: PanicInput): Promise<void> {
    const contacts = await this.smsBudget.sosRecipients(incident, await this.store.getContacts(incident.userId));
    const body = panicMessage({
      personName: incident.displayName,
      locationName: incident.locationName,
      location: incident.location,
      raisedAt: incident.createdAt,
      note: input.note,
    });
    await this.store.addDeliveries(
      incident,
      contacts.map((c) => ({
        key: deliveryKey(incident.id, c.id, 'sos'),
        contactId: c.id,
        contactName: c.name,
        phone: c.phone,
        kind: 'sos' as const,
        body,
        traceparent: this.tracing.traceparent(),
      })),
    );
  }

  /** The timer the panic took over: its escalation is this incident, done once the texts are queued. */
  private async completeTimer(timer: Timer, incident: Incident): Promise<void> {
    this.events.publish(timerEvent('timer.expired', { ...timer, incidentId: incident.id }));
    await this.store.markEscalated(timer.id, incident.id);
  }
}
