/** Emergency contacts on the SQLite store (SQL in ./contacts-statements.ts): a person's list and their defaults, replaced whole. */
import type { Contact } from '../../domain/contact.js';
import type { ContactSettings } from '../../domain/locale.js';
import { read, write, type Ctx } from './ctx.js';
import { toContact, toContactSettings, type ContactRow, type ContactSettingsRow } from './rows.js';

const contactsOfUser = (c: Ctx, userId: string): Contact[] => (c.st.contactsOfUser.all(userId) as ContactRow[]).map(toContact);

export const getContacts = read(contactsOfUser);

export const getContactSettings = read((c, userId: string): ContactSettings =>
  toContactSettings(c.st.contactSettingsOf.get(userId) as ContactSettingsRow | undefined),
);

export const replaceContacts = write((c, userId: string, contacts: Contact[], settings: ContactSettings = {}): Contact[] => {
  c.db
    .transaction(() => {
      c.st.contactsDelete.run(userId);
      contacts.forEach((x, i) => c.st.contactInsert.run(userId, i, x.id, x.name, x.phone, x.language ?? null));
      c.st.contactSettingsPut.run({ userId, language: settings.language ?? null, timeZone: settings.timeZone ?? null });
    })
    .immediate();
  return contactsOfUser(c, userId);
});
