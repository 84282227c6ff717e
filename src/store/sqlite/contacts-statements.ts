/** SQL of the emergency contacts (./contacts.ts), by name; prepared once with every other statement (./statements.ts). */

export const CONTACTS_SQL = Object.freeze({
  contactsOfUser: 'SELECT id, name, phone, language, state FROM contacts WHERE user_id = ? ORDER BY position',
  contactStatesOf: 'SELECT id, state, confirmed_before FROM contacts WHERE user_id = ?',
  // @from: JSON array of the states it may move from
  // an opt-out remembers whether the contact had confirmed (the right-hand sides read the row as it was)
  contactSetState: `UPDATE contacts SET state = @to, confirmed_before = CASE WHEN @to = 'opted_out' THEN (state = 'confirmed') ELSE 0 END
    WHERE user_id = @userId AND id = @id AND state IN (SELECT value FROM json_each(@from))
    RETURNING id, name, phone, language, state`,
  contactOptIn: `UPDATE contacts SET state = CASE WHEN confirmed_before = 1 THEN 'confirmed' ELSE 'pending' END, confirmed_before = 0
    WHERE user_id = @userId AND id = @id AND state = 'opted_out'
    RETURNING id, name, phone, language, state`,
  contactsDelete: 'DELETE FROM contacts WHERE user_id = ?',
  contactInsert:
    'INSERT INTO contacts (user_id, position, id, name, phone, language, state, confirmed_before) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  contactSettingsOf: 'SELECT language, time_zone FROM contact_settings WHERE user_id = ?',
  contactSettingsPut: `INSERT INTO contact_settings (user_id, language, time_zone) VALUES (@userId, @language, @timeZone)
    ON CONFLICT (user_id) DO UPDATE SET language = excluded.language, time_zone = excluded.time_zone`,
});
