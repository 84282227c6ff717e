/** Replies from contacts on the MongoDB store: contacts found by number (index `contacts_by_phone`), acknowledgements pushed once. */
import { OPEN_INCIDENT } from '../../domain/incident.js';
import type { ContactAck } from '../../domain/inbound-sms.js';
import type { ContactAckOutcome, ContactOfPerson } from '../port-replies.js';
import { toContact, toIncident } from './docs.js';
import type { ContactsDoc, IncidentDoc } from './schemas.js';
import { casOne, type Ctx } from './writes.js';

export async function contactsWithPhone(ctx: Ctx, phone: string): Promise<ContactOfPerson[]> {
  const docs = await ctx.m.contacts.find({ 'contacts.phone': phone }).sort({ _id: 1 }).lean<ContactsDoc[]>().exec();
  return docs.flatMap((d) => d.contacts.filter((c) => c.phone === phone).map((c) => ({ userId: d._id, contact: toContact(c) })));
}

/** One conditional `$push`: the open status, the contact and the message are checked in the same document write. */
export async function addContactAck(ctx: Ctx, incidentId: string, ack: ContactAck): Promise<ContactAckOutcome | null> {
  const d = await casOne(ctx, ctx.m.incidents, {
    filter: {
      _id: incidentId,
      status: { $in: [...OPEN_INCIDENT] },
      'contactAcks.contactId': { $ne: ack.contactId },
      'contactAcks.messageSid': { $ne: ack.messageSid },
    },
    update: (op) => ({ $push: { contactAcks: { ...ack } }, $set: { lastOp: op }, $currentDate: { updatedAt: true } }),
  });
  if (d) return { incident: toIncident(d), added: true };
  const cur = await ctx.m.incidents.findById(incidentId).lean<IncidentDoc>().exec();
  if (!cur || !OPEN_INCIDENT.includes(cur.status)) return null;
  return { incident: toIncident(cur), added: false };
}
