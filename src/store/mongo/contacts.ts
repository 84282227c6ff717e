/** Contact queries of the MongoDB store: one document per person holding the whole list and their defaults. */
import type { Contact } from '../../domain/contact.js';
import type { ContactSettings } from '../../domain/locale.js';
import { toContact, toContactSettings } from './docs.js';
import type { ContactsDoc } from './schemas.js';
import { casOne, type Ctx } from './writes.js';

export async function getContacts(ctx: Ctx, userId: string): Promise<Contact[]> {
  const d = await ctx.m.contacts.findById(userId).lean<ContactsDoc>().exec();
  return d ? d.contacts.map(toContact) : [];
}

export async function getContactSettings(ctx: Ctx, userId: string): Promise<ContactSettings> {
  return toContactSettings(await ctx.m.contacts.findById(userId, { language: 1, timeZone: 1 }).lean<ContactsDoc>().exec());
}

/** Replacing the whole list (and the defaults) is one atomic single-document upsert. */
export async function replaceContacts(ctx: Ctx, userId: string, contacts: Contact[], settings: ContactSettings = {}): Promise<Contact[]> {
  const now = await ctx.now();
  const unset = { ...(settings.language ? {} : { language: 1 }), ...(settings.timeZone ? {} : { timeZone: 1 }) };
  const d = await casOne(ctx, ctx.m.contacts, {
    filter: { _id: userId },
    update: (op) => ({
      $set: { contacts: contacts.map(toContact), updatedAt: now, lastOp: op, ...settings },
      ...(Object.keys(unset).length > 0 ? { $unset: unset } : {}),
    }),
    upsert: true,
  });
  return d ? d.contacts.map(toContact) : [];
}
