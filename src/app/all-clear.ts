/**
 * Completes the all-clear of a false alarm. The CAS to `false_alarm` recorded
 * `allClear: 'pending'` on the incident; every step below is idempotent, so the request
 * that made the CAS and the sweeper's repair may both run it, after a crash at any line:
 *   create all-clears (unique per key) → supersede pending SOS → publish → mark done.
 * All-clears are created before the SOS texts are superseded: both steps read the SOS
 * states, and a pending SOS keeps its "may have reached" flag when superseded, so a
 * repair picks the same contacts.
 */
import { deliveryKey } from '../domain/delivery.js';
import type { Incident } from '../domain/incident.js';
import { allClearMessage, maskPhone } from '../domain/messages.js';
import { deliveryEvent, incidentEvent, type EventPublisher } from '../realtime/events.js';
import type { Store } from '../store/port.js';
import type { SmsBudget } from './sms-budget.js';

export class AllClear {
  constructor(
    private readonly store: Store,
    private readonly events: EventPublisher,
    /** shared with the escalator */
    private readonly smsBudget: SmsBudget,
  ) {}

  /** Owed by this incident and not yet done. */
  static owed(incident: Incident): boolean {
    return incident.status === 'false_alarm' && incident.allClear === 'pending';
  }

  /**
   * One all-clear per contact whose SOS went out or may have (same idempotency scheme),
   * within what the SOS left of the per-incident cap, the person's first contacts first.
   * `personName` falls back to the name the timer was armed with.
   */
  async complete(incident: Incident, personName?: string): Promise<{ created: number; superseded: number }> {
    const order = (await this.store.getContacts(incident.userId)).map((c) => c.id);
    const recipients = await this.smsBudget.allClearRecipients(incident, order);
    const body = allClearMessage({ personName: personName ?? incident.displayName });
    await this.store.addDeliveries(
      incident,
      recipients.map((d) => ({
        key: deliveryKey(incident.id, d.contactId, 'all_clear'),
        contactId: d.contactId,
        contactName: d.contactName,
        phone: d.phone,
        kind: 'all_clear' as const,
        body,
      })),
    );
    const superseded = await this.store.supersedePendingSos(incident.id);
    for (const d of superseded) this.events.publish(deliveryEvent(d, maskPhone));
    this.events.publish(incidentEvent(incident));
    await this.store.markAllClearDone(incident.id);
    return { created: recipients.length, superseded: superseded.length };
  }
}
