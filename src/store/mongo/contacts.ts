/**
 * Contact queries of the MongoDB store: one document per person holding the whole list and their
 * defaults. Writes that keep what is stored (the states) read the document and write it back only
 * if nobody wrote it since (CAS on `lastOp`), trying again when someone did.
 */
import type { Contact, ContactState } from '../../domain/contact.js';
import { Unavailable } from '../../domain/errors.js';
import type { ContactSettings } from '../../domain/locale.js';
import { toContact, toContactSettings } from './docs.js';
import { isDuplicateKey } from './errors.js';
import type { ContactsDoc } from './schemas.js';
import { casOne, type Ctx } from './writes.js';

/** How many times a write is tried when another write of the same list won in between. */
const CAS_TRIES = 20;

export async function getContacts(ctx: Ctx, userId: string): Promise<Contact[]> {
  const d = await ctx.m.contacts.findById(userId).lean<ContactsDoc>().exec();
  return d ? d.contacts.map(toContact) : [];
}

export async function getContactSettings(ctx: Ctx, userId: string): Promise<ContactSettings> {
  return toContactSettings(await ctx.m.contacts.findById(userId, { language: 1, timeZone: 1 }).lean<ContactsDoc>().exec());
}

/** The list as it is, then `next(list)` written only if nothing changed it since (null from `next`: nothing to write). */
async function rewrite(
  ctx: Ctx,
  userId: string,
  next: (cur: ContactsDoc | null) => { contacts: Contact[]; settings?: ContactSettings; confirmedBefore?: string[] } | null,
): Promise<ContactsDoc | null> {
  for (let i = 0; i < CAS_TRIES; i++) {
    const cur = await ctx.m.contacts.findById(userId).lean<ContactsDoc>().exec();
    const want = next(cur);
    if (!want) return null;
    const now = await ctx.now();
    // ids still on the list only: one removed and added again starts over
    const onList = new Set(want.contacts.map((c) => c.id));
    const confirmedBefore = (want.confirmedBefore ?? cur?.confirmedBefore ?? []).filter((id) => onList.has(id));
    const set = { contacts: want.contacts.map(toContact), confirmedBefore, updatedAt: now, ...(want.settings ?? {}) };
    const unset = want.settings
      ? { ...(want.settings.language ? {} : { language: 1 }), ...(want.settings.timeZone ? {} : { timeZone: 1 }) }
      : {};
    try {
      const d = await casOne(ctx, ctx.m.contacts, {
        // the first list is an insert: a concurrent first insert makes this one a duplicate key, tried again
        filter: cur ? { _id: userId, lastOp: cur.lastOp ?? { $exists: false } } : { _id: userId },
        update: (op) => ({ $set: { ...set, lastOp: op }, ...(Object.keys(unset).length > 0 ? { $unset: unset } : {}) }),
        upsert: cur === null,
      });
      if (d) return d;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
  }
  // answered 503 with Retry-After: the list is being written by others right now
  throw Unavailable('store_busy', `contacts: ${CAS_TRIES} other writes of this list won in a row; try again`);
}

/** A contact still on the list keeps its state, a new one is pending; the defaults are replaced with the list. */
export async function replaceContacts(ctx: Ctx, userId: string, contacts: Contact[], settings: ContactSettings = {}): Promise<Contact[]> {
  const d = await rewrite(ctx, userId, (cur) => {
    const kept = new Map((cur?.contacts ?? []).map((c) => [c.id, toContact(c).state]));
    return { contacts: contacts.map((c) => ({ ...c, state: kept.get(c.id) ?? 'pending' })), settings };
  });
  return d ? d.contacts.map(toContact) : [];
}

export async function setContactState(
  ctx: Ctx,
  userId: string,
  contactId: string,
  to: ContactState,
  from: readonly ContactState[],
): Promise<Contact | null> {
  const d = await rewrite(ctx, userId, (cur) => {
    const list = (cur?.contacts ?? []).map(toContact);
    const hit = list.find((c) => c.id === contactId);
    if (!hit || !from.includes(hit.state ?? 'pending')) return null;
    const others = (cur?.confirmedBefore ?? []).filter((id) => id !== contactId);
    return {
      contacts: list.map((c) => (c.id === contactId ? { ...c, state: to } : c)),
      settings: toContactSettings(cur),
      // an opt-out remembers whether the contact had confirmed
      confirmedBefore: to === 'opted_out' && hit.state === 'confirmed' ? [...others, contactId] : others,
    };
  });
  return d?.contacts.map(toContact).find((c) => c.id === contactId) ?? null;
}

/** opted_out → confirmed when it had confirmed before opting out, else pending. */
export async function optInContact(ctx: Ctx, userId: string, contactId: string): Promise<Contact | null> {
  let moved = false;
  const d = await rewrite(ctx, userId, (cur) => {
    const list = (cur?.contacts ?? []).map(toContact);
    const hit = list.find((c) => c.id === contactId);
    moved = hit?.state === 'opted_out';
    if (!moved) return null;
    const before = cur?.confirmedBefore ?? [];
    const to = before.includes(contactId) ? 'confirmed' : 'pending';
    return {
      contacts: list.map((c) => (c.id === contactId ? { ...c, state: to } : c)),
      settings: toContactSettings(cur),
      confirmedBefore: before.filter((id) => id !== contactId),
    };
  });
  return moved ? (d?.contacts.map(toContact).find((c) => c.id === contactId) ?? null) : null;
}
