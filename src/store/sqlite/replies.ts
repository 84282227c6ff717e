/** Replies from contacts on the SQLite store (SQL in ./replies-statements.ts). */
import { OPEN_INCIDENT } from '../../domain/incident.js';
import type { ContactAck } from '../../domain/inbound-sms.js';
import type { ContactAckOutcome, ContactOfPerson } from '../port-replies.js';
import { read, write } from './ctx.js';
import { toContact, toIncident, type ContactRow, type IncidentRow } from './rows.js';

export const contactsWithPhone = read((c, phone: string): ContactOfPerson[] =>
  (c.st.contactsWithPhone.all(phone) as (ContactRow & { user_id: string })[]).map((r) => ({ userId: r.user_id, contact: toContact(r) })),
);

/** One statement: the check (open, contact and message not recorded) and the append are one write. */
export const addContactAck = write((c, incidentId: string, ack: ContactAck): ContactAckOutcome | null => {
  const json = JSON.stringify({ contactId: ack.contactId, name: ack.name, at: ack.at.getTime(), messageSid: ack.messageSid });
  const row = c.st.incidentAddContactAck.get({ id: incidentId, ack: json, contactId: ack.contactId, messageSid: ack.messageSid }) as
    IncidentRow | undefined;
  if (row) return { incident: toIncident(row), added: true };
  const cur = c.st.incidentById.get(incidentId) as IncidentRow | undefined;
  if (!cur || !OPEN_INCIDENT.includes(cur.status)) return null;
  return { incident: toIncident(cur), added: false };
});
