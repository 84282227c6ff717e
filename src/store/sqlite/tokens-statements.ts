/** SQL of token revocation (./tokens.ts), by name; prepared once with every other statement (./statements.ts). */
export const TOKENS_SQL = Object.freeze({
  // the stamp only moves forward: a later one already there stays
  tokensRevoke: `INSERT INTO token_revocations (user_id, not_before) VALUES (@userId, @now)
    ON CONFLICT (user_id) DO UPDATE SET not_before = MAX(not_before, excluded.not_before) RETURNING not_before`,
  // ?: JSON array of user ids
  tokensNotBefore: 'SELECT user_id, not_before FROM token_revocations WHERE user_id IN (SELECT value FROM json_each(?))',
});
