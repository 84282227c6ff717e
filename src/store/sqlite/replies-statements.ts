/** SQL of the replies from contacts (./replies.ts), by name; prepared once with every other statement (./statements.ts). */

export const REPLIES_SQL = Object.freeze({
  // index contacts_phone
  contactsWithPhone: 'SELECT user_id, id, name, phone, language, state FROM contacts WHERE phone = ? ORDER BY user_id, position',
  // @ack: JSON {contactId, name, at, messageSid}; once per contact and per message, only while the incident is open
  incidentAddContactAck: `UPDATE incidents SET contact_acks = json_insert(COALESCE(contact_acks, '[]'), '$[#]', json(@ack)), updated_at = store_now()
    WHERE id = @id AND status IN ('active','acknowledged')
      AND NOT EXISTS (SELECT 1 FROM json_each(COALESCE(incidents.contact_acks, '[]'))
        WHERE json_extract(value, '$.contactId') = @contactId OR json_extract(value, '$.messageSid') = @messageSid)
    RETURNING *`,
});
