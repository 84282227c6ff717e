/** SQL of the emergency contacts (./contacts.ts), by name; prepared once with every other statement (./statements.ts). */

export const CONTACTS_SQL = Object.freeze({
  contactsOfUser: 'SELECT id, name, phone, language, state FROM contacts WHERE user_id = ? ORDER BY position',
  contactStatesOf: 'SELECT id, state FROM contacts WHERE user_id = ?',
  // @from: JSON array of the states it may move from
  contactSetState: `UPDATE contacts SET state = @to WHERE user_id = @userId AND id = @id AND state IN (SELECT value FROM json_each(@from))
    RETURNING id, name, phone, language, state`,
  contactsDelete: 'DELETE FROM contacts WHERE user_id = ?',
  contactInsert: 'INSERT INTO contacts (user_id, position, id, name, phone, language, state) VALUES (?, ?, ?, ?, ?, ?, ?)',
  contactSettingsOf: 'SELECT language, time_zone FROM contact_settings WHERE user_id = ?',
  contactSettingsPut: `INSERT INTO contact_settings (user_id, language, time_zone) VALUES (@userId, @language, @timeZone)
    ON CONFLICT (user_id) DO UPDATE SET language = excluded.language, time_zone = excluded.time_zone`,
});
