/** Replies from contacts (issue 37, item 2): finding who wrote, and recording their "I'm on it". */
import type { Contact } from '../domain/contact.js';
import type { Incident } from '../domain/incident.js';
import type { ContactAck } from '../domain/inbound-sms.js';

export interface ContactOfPerson {
  userId: string;
  contact: Contact;
}

/** What recording an acknowledgement did: `added` false when the contact (or that message) was recorded before. */
export interface ContactAckOutcome {
  incident: Incident;
  added: boolean;
}

export interface ReplyStore {
  /** Every person's contact with this E.164 number (an index on the number, never a scan); `[]` when none. */
  contactsWithPhone(phone: string): Promise<ContactOfPerson[]>;
  /**
   * Add `ack` to the incident's contact acknowledgements, once per contact and once per message
   * (a repeated webhook, or a second YES, adds nothing), atomically with other acknowledgements.
   * `null` when the incident does not exist or is no longer open.
   */
  addContactAck(incidentId: string, ack: ContactAck): Promise<ContactAckOutcome | null>;
}
