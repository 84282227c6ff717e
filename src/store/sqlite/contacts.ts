/** Emergency contacts on the SQLite store (SQL in ./contacts-statements.ts): a person's list, replaced whole. */
import type { Contact } from '../../domain/contact.js';
import { read, write, type Ctx } from './ctx.js';
import { toContact, type ContactRow } from './rows.js';

const contactsOfUser = (c: Ctx, userId: string): Contact[] => (c.st.contactsOfUser.all(userId) as ContactRow[]).map(toContact);

export const getContacts = read(contactsOfUser);

export const replaceContacts = write((c, userId: string, contacts: Contact[]): Contact[] => {
  c.db
    .transaction(() => {
      c.st.contactsDelete.run(userId);
      contacts.forEach((x, i) => c.st.contactInsert.run(userId, i, x.id, x.name, x.phone));
    })
    .immediate();
  return contactsOfUser(c, userId);
});
