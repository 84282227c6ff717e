/**
 * Token revocation on the SQLite store: the per-person "tokens not before" stamp, and a
 * moderator's audit line in the same IMMEDIATE transaction. SQL in ./tokens-statements.ts.
 */
import { auditId } from '../../domain/moderation.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import { read, write } from './ctx.js';

export const revokeTokens = write((c, userId: string, moderator?: string): Date => {
  const run = c.db.transaction((): Date => {
    const now = c.clock();
    const row = c.st.tokensRevoke.get({ userId, now }) as { not_before: number };
    const stamp = new Date(row.not_before);
    if (moderator !== undefined)
      c.st.auditInsert.run({
        id: auditId.revoke(userId, stamp),
        at: now,
        actor: moderator,
        action: 'user.revoke_tokens',
        target: userId,
        incidentId: null,
        person: userId,
        reason: null,
      });
    return stamp;
  });
  return run.immediate();
});

export const tokensNotBefore = read((c, userIds: readonly string[]): Map<string, Date> => {
  const out = new Map<string, Date>();
  for (let i = 0; i < userIds.length; i += PAGE_SIZE) {
    const rows = c.st.tokensNotBefore.all(JSON.stringify(userIds.slice(i, i + PAGE_SIZE))) as { user_id: string; not_before: number }[];
    for (const r of rows) out.set(r.user_id, new Date(r.not_before));
  }
  return out;
});
