/**
 * Replies from contacts (issue 37, item 2; docs/sms.md, "Replies from contacts"). The sender's
 * number finds its contacts (one per person who saved it); the keyword decides:
 * YES/OK/1 → "I'm on it" on the person's open incident (once per contact), or confirms the
 * contact when no incident is open; STOP & co. → opted_out; START/UNSTOP → pending again;
 * HELP → help. The body is read for its keyword only: it is never stored, logged or repeated.
 */
import type { ContactIdKey } from '../domain/contact.js';
import { isDuress } from '../domain/incident.js';
import { keywordOf, type InboundOutcome } from '../domain/inbound-sms.js';
import { contactAcknowledgedNotification, contactOptedOutNotification } from '../domain/notification.js';
import { contactAckEvent, type EventPublisher } from '../realtime/events.js';
import type { Store } from '../store/port.js';
import { newId } from './ids.js';
import type { NotificationService } from './notifications.js';

export interface InboundReply {
  /** E.164 of the sender (From) */
  from: string;
  body: string | undefined;
  /** the carrier's message id (MessageSid) */
  messageSid: string;
  at: Date;
}

/** The first outcome by this order answers a reply that reached several people's contacts. */
const PRIORITY: readonly InboundOutcome[] = [
  'acknowledged',
  'already_acknowledged',
  'opted_out',
  'opted_in',
  'confirmed',
  'help',
  'no_incident',
  'not_understood',
];

export class ContactReplies {
  constructor(
    private readonly store: Store,
    private readonly contactIds: ContactIdKey,
    private readonly events: EventPublisher,
    private readonly notifications: NotificationService,
  ) {}

  async handle(r: InboundReply): Promise<InboundOutcome> {
    const found = await this.store.contactsWithPhone(r.from);
    // the id is derived from the person and the number: a row whose id was not (a stale key) is not this sender's
    const mine = found.filter((f) => f.contact.id === this.contactIds.of(f.userId, r.from));
    if (mine.length === 0) return 'unknown_sender';
    const outcomes: InboundOutcome[] = [];
    for (const { userId, contact } of mine) outcomes.push(await this.one(r, userId, contact));
    return PRIORITY.find((o) => outcomes.includes(o)) ?? 'not_understood';
  }

  private async one(r: InboundReply, userId: string, contact: { id: string; name: string }): Promise<InboundOutcome> {
    switch (keywordOf(r.body)) {
      case 'stop': {
        const moved = await this.store.setContactState(userId, contact.id, 'opted_out', ['pending', 'confirmed', 'declined']);
        if (moved) await this.notifications.record(contactOptedOutNotification(userId, contact, r.messageSid, newId('ntf')));
        return 'opted_out';
      }
      case 'start':
        // back to where they stood: confirmed if they had confirmed before opting out, else pending
        await this.store.optInContact(userId, contact.id);
        return 'opted_in';
      case 'help':
        return 'help';
      case 'yes':
        return this.yes(r, userId, contact);
      case 'other': {
        const open = await this.store.openIncidentOf(userId);
        return open ? 'not_understood' : 'no_incident';
      }
    }
  }

  private async yes(r: InboundReply, userId: string, contact: { id: string; name: string }): Promise<InboundOutcome> {
    const open = await this.store.openIncidentOf(userId);
    if (!open) {
      // no alert to answer: YES confirms the enrolment (an opted-out number must send START first)
      const c = await this.store.setContactState(userId, contact.id, 'confirmed', ['pending', 'declined']);
      return c ? 'confirmed' : 'no_incident';
    }
    const out = await this.store.addContactAck(open.id, { contactId: contact.id, name: contact.name, at: r.at, messageSid: r.messageSid });
    if (!out) return 'no_incident'; // closed in between
    if (!out.added) return 'already_acknowledged';
    this.events.publish(contactAckEvent(out.incident, contact.id));
    // a duress incident is silent: nothing reaches the person's inbox (their phone may be in the wrong hands)
    if (!isDuress(out.incident)) await this.notifications.record(contactAcknowledgedNotification(out.incident, contact, newId('ntf')));
    return 'acknowledged';
  }
}
