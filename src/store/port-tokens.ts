/**
 * Store port for token revocation: one "tokens not before" stamp per person. A token whose
 * `iat` is not after its person's stamp is refused (src/auth/tokens.ts `isRevoked`); the stamp
 * only moves forward, on the store's clock, so replicas with skewed clocks agree on it.
 */
export interface TokenStore {
  /**
   * Move `userId`'s stamp to the store's now (a later stamp already there stays) and return it.
   * With `moderator`, records the audit line `revoke:<userId>:<stampMs>` (`user.revoke_tokens`):
   * SQLite in the same transaction; MongoDB just after (upserted by its id, as every audit line).
   */
  revokeTokens(userId: string, moderator?: string): Promise<Date>;
  /** The stamps of these people; someone whose tokens were never revoked is absent. */
  tokensNotBefore(userIds: readonly string[]): Promise<Map<string, Date>>;
}
