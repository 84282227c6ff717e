/**
 * How an SOS ends for the contacts. The incident is the outbox of its ending: the CAS to
 * `false_alarm` ("I'm safe"), or to `resolved` by a moderator with closing texts on (the
 * default), records `allClear: 'pending'`; every step below is idempotent, so the request
 * that made the CAS and the sweeper's repair may both run it, after a crash at any line:
 *   create all-clears (unique per key) → supersede unsent SOS and follow-ups → publish → mark done.
 * All-clears are created before the SOS texts are superseded: both steps read the SOS
 * states, and a pending SOS keeps its "may have reached" flag when superseded, so a
 * repair picks the same contacts. One text per contact (key `…:all_clear`): "checked in and
 * safe" after I'm safe, "closed by the safety team" after a moderator's resolve; "I'm safe"
 * after a resolve that texted nobody still tells the contacts who were texted.
 */
import { newDelivery } from '../domain/delivery.js';
import { decideIncident, type Incident } from '../domain/incident.js';
import { maskPhone } from '../domain/messages.js';
import { deliveryEvent, incidentEvent, type EventPublisher } from '../realtime/events.js';
import type { Store } from '../store/port.js';
import { allClearMessage, closedMessage, perLanguage } from '../texts/render.js';
import { contactTexts } from './contact-texts.js';
import type { SmsBudget } from './sms-budget.js';

/** What the closing text says: the person checked in, or the safety team closed the alert. */
export type Ending = 'safe' | 'closed';

export class AllClear {
  constructor(
    private readonly store: Store,
    private readonly events: EventPublisher,
    /** shared with the escalator */
    private readonly smsBudget: SmsBudget,
    /** a CAS lost to a concurrent change (counted by the caller's metric) */
    private readonly onConflict: () => void = () => {},
  ) {}

  /** Owed by this incident and not yet done. */
  static owed(incident: Incident): boolean {
    return incident.allClear === 'pending' && (incident.status === 'false_alarm' || incident.status === 'resolved');
  }

  /**
   * The person says they are safe about this incident (from any timer linked to it, or the
   * incident itself after a panic): a false alarm with its all-clear; after a moderator's resolve
   * that texted nobody, the all-clear is owed now. Repeats answer the incident as it is.
   */
  async personSafe(incident: Incident, by: { userId: string; displayName?: string }, traceparent?: string): Promise<Incident> {
    let cur = incident;
    for (let i = 0; i < 3; i++) {
      const d = decideIncident('false_alarm', cur.status);
      if (d.kind === 'noop') {
        if (AllClear.owed(cur)) await this.complete(cur, by.displayName, traceparent, 'safe');
        return cur;
      }
      if (d.kind === 'conflict') {
        // a moderator closed it: contacts who were alarmed still hear the person is safe, once
        const owed = cur.allClear === undefined ? await this.store.oweAllClear(cur.id) : cur.allClear === 'pending' ? cur : null;
        if (owed) await this.complete(owed, by.displayName, traceparent, 'safe');
        return owed ?? cur;
      }
      const moved = await this.store.transitionIncident(cur.id, d.from, d.to, by.userId);
      if (moved) {
        await this.complete(moved, by.displayName, traceparent, 'safe');
        return moved;
      }
      this.onConflict();
      cur = (await this.store.getIncident(cur.id)) ?? cur;
    }
    return cur;
  }

  /**
   * One all-clear per contact whose SOS went out or may have (same idempotency scheme),
   * within what the SOS left of the per-incident cap, the person's first contacts first.
   * `personName` falls back to the name the timer was armed with; `ending` to what the
   * incident's status says.
   */
  async complete(
    incident: Incident,
    personName?: string,
    traceparent?: string,
    ending: Ending = incident.status === 'resolved' ? 'closed' : 'safe',
  ): Promise<{ created: number; superseded: number }> {
    const { contacts, settings, byId } = await contactTexts(this.store, incident.userId);
    const recipients = await this.smsBudget.allClearRecipients(
      incident,
      contacts.map((c) => c.id),
    );
    const who = { personName: personName ?? incident.displayName };
    const body = perLanguage(settings, incident.id, (ctx) => (ending === 'closed' ? closedMessage(who, ctx) : allClearMessage(who, ctx)));
    await this.store.addDeliveries(
      incident,
      recipients.map((d) => newDelivery(incident.id, d, 'all_clear', body(byId(d.contactId)), { traceparent })),
    );
    const superseded = await this.store.supersedePendingSos(incident.id);
    for (const d of superseded) this.events.publish(deliveryEvent(d, maskPhone));
    this.events.publish(incidentEvent(incident));
    await this.store.markAllClearDone(incident.id);
    return { created: recipients.length, superseded: superseded.length };
  }
}
