/** SQL of the contact id re-key (./contact-ids.ts), by name; prepared once with every other statement (./statements.ts). */

export const CONTACT_IDS_SQL = Object.freeze({
  keyingScheme: 'SELECT scheme FROM contact_id_keying WHERE id = 1',
  keyingSet: 'UPDATE contact_id_keying SET scheme = ? WHERE id = 1',
  // every person's stored ids, with the number where a row still holds it unmasked
  rekeyStoredIds: `SELECT user_id, id, phone FROM contacts
    UNION ALL SELECT user_id, contact_id AS id, CASE WHEN redacted_at IS NULL THEN phone END AS phone FROM deliveries
    ORDER BY user_id`,
  rekeyContact: 'UPDATE contacts SET id = @to WHERE user_id = @userId AND id = @from',
  rekeyDeliveriesOf: 'SELECT key, incident_id, kind FROM deliveries WHERE user_id = @userId AND contact_id = @from',
  // simulated carriers name the message after the key: those ids move with it
  rekeyDelivery: `UPDATE deliveries SET key = @newKey, contact_id = @to,
      provider_message_id = replace(provider_message_id, @from, @to), earlier_message_ids = replace(earlier_message_ids, @from, @to)
    WHERE key = @oldKey`,
  // an audit line's id and target name the delivery key (domain/moderation.ts auditId)
  rekeyAudit: 'UPDATE audit SET id = replace(id, @oldKey, @newKey), target = @newKey WHERE target = @oldKey',
});
