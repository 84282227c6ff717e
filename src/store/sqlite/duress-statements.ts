/** SQL of the duress PIN (./duress.ts), by name; prepared once with every other statement (./statements.ts). */
export const DURESS_SQL = Object.freeze({
  duressSet: `INSERT INTO duress_pins (user_id, salt, hash, cost, updated_at) VALUES (@userId, @salt, @hash, @cost, @now)
    ON CONFLICT (user_id) DO UPDATE SET salt = excluded.salt, hash = excluded.hash, cost = excluded.cost, updated_at = excluded.updated_at`,
  duressGet: 'SELECT salt, hash, cost FROM duress_pins WHERE user_id = ?',
  duressDelete: 'DELETE FROM duress_pins WHERE user_id = ?',
});
