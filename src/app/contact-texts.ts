/**
 * A person's contacts with the defaults of their texts, read together: every text about an
 * incident is written per contact, in their language (src/texts/render.ts `perLanguage`).
 */
import type { Contact } from '../domain/contact.js';
import type { ContactSettings } from '../domain/locale.js';
import type { Store } from '../store/port.js';

export interface ContactTexts {
  contacts: Contact[];
  settings: ContactSettings;
  /** the contact a delivery names (absent: removed from the list since; their texts use the defaults) */
  byId(contactId: string): Contact | undefined;
}

export async function contactTexts(store: Pick<Store, 'getContacts' | 'getContactSettings'>, userId: string): Promise<ContactTexts> {
  const [contacts, settings] = await Promise.all([store.getContacts(userId), store.getContactSettings(userId)]);
  const byId = new Map(contacts.map((c) => [c.id, c]));
  return { contacts, settings, byId: (id) => byId.get(id) };
}
