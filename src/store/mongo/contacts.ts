/** Contact queries of the MongoDB store: one document per person holding the whole list. */
import type { Contact } from '../../domain/contact.js';
import { toContact } from './docs.js';
import type { ContactsDoc } from './schemas.js';
import { casOne, type Ctx } from './writes.js';

export async function getContacts(ctx: Ctx, userId: string): Promise<Contact[]> {
  const d = await ctx.m.contacts.findById(userId).lean<ContactsDoc>().exec();
  return d ? d.contacts.map(toContact) : [];
}

/** Replacing the whole list is one atomic single-document upsert. */
export async function replaceContacts(ctx: Ctx, userId: string, contacts: Contact[]): Promise<Contact[]> {
  const now = await ctx.now();
  const d = await casOne(ctx, ctx.m.contacts, {
    filter: { _id: userId },
    update: (op) => ({ $set: { contacts: contacts.map(toContact), updatedAt: now, lastOp: op } }),
    upsert: true,
  });
  return d ? d.contacts.map(toContact) : [];
}
