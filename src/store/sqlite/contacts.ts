/** Emergency contacts on the SQLite store (SQL in ./contacts-statements.ts): a person's list and their defaults, replaced whole. */
import type { Contact, ContactState } from '../../domain/contact.js';
import type { ContactSettings } from '../../domain/locale.js';
import { read, write, type Ctx } from './ctx.js';
import { toContact, toContactSettings, type ContactRow, type ContactSettingsRow } from './rows.js';

const contactsOfUser = (c: Ctx, userId: string): Contact[] => (c.st.contactsOfUser.all(userId) as ContactRow[]).map(toContact);

export const getContacts = read(contactsOfUser);

export const getContactSettings = read((c, userId: string): ContactSettings =>
  toContactSettings(c.st.contactSettingsOf.get(userId) as ContactSettingsRow | undefined),
);

/** One transaction: a contact still on the list keeps its state (read inside it), a new one is pending. */
export const replaceContacts = write((c, userId: string, contacts: Contact[], settings: ContactSettings = {}): Contact[] => {
  c.db
    .transaction(() => {
      const kept = new Map(
        (c.st.contactStatesOf.all(userId) as { id: string; state: ContactState; confirmed_before: number }[]).map((r) => [r.id, r]),
      );
      c.st.contactsDelete.run(userId);
      contacts.forEach((x, i) => {
        const k = kept.get(x.id);
        c.st.contactInsert.run(userId, i, x.id, x.name, x.phone, x.language ?? null, k?.state ?? 'pending', k?.confirmed_before ?? 0);
      });
      c.st.contactSettingsPut.run({ userId, language: settings.language ?? null, timeZone: settings.timeZone ?? null });
    })
    .immediate();
  return contactsOfUser(c, userId);
});

export const setContactState = write(
  (c, userId: string, contactId: string, to: ContactState, from: readonly ContactState[]): Contact | null => {
    const row = c.st.contactSetState.get({ userId, id: contactId, to, from: JSON.stringify(from) }) as ContactRow | undefined;
    return row ? toContact(row) : null;
  },
);

export const optInContact = write((c, userId: string, contactId: string): Contact | null => {
  const row = c.st.contactOptIn.get({ userId, id: contactId }) as ContactRow | undefined;
  return row ? toContact(row) : null;
});
