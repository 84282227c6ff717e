/** SQL of the emergency contacts (./contacts.ts), by name; prepared once with every other statement (./statements.ts). */

export const CONTACTS_SQL = Object.freeze({
  contactsOfUser: 'SELECT id, name, phone FROM contacts WHERE user_id = ? ORDER BY position',
  contactsDelete: 'DELETE FROM contacts WHERE user_id = ?',
  contactInsert: 'INSERT INTO contacts (user_id, position, id, name, phone) VALUES (?, ?, ?, ?, ?)',
});
