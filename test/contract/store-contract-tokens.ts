/** Contract cases for token revocation: each person's "tokens not before" stamp, and the moderator's audit line. */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { ContractContext } from './store-contract-helpers.js';

const person = (tag: string) => `tok-${tag}-${randomUUID().slice(0, 8)}`;

export function tokenCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('token revocation', () => {
    it('revocation: a stamp is the store clock at the revocation; only the people revoked have one, read for many at once', async () => {
      const store = ctx.store();
      const ann = person('ann');
      const bob = person('bob');
      expect(await store.tokensNotBefore([ann, bob])).toEqual(new Map());
      const before = await store.now();
      const stamp = await store.revokeTokens(ann);
      const after = await store.now();
      expect(stamp.getTime()).toBeGreaterThanOrEqual(before.getTime());
      expect(stamp.getTime()).toBeLessThanOrEqual(after.getTime());
      expect(await store.tokensNotBefore([ann, bob])).toEqual(new Map([[ann, stamp]]));
      // more people than one query takes: every stamp is found
      const many = Array.from({ length: 1200 }, (_, i) => `${bob}-${i}`);
      const late = await store.revokeTokens(many[1100]!);
      const found = await store.tokensNotBefore([...many, ann]);
      expect(found).toEqual(
        new Map([
          [many[1100]!, late],
          [ann, stamp],
        ]),
      );
      expect(await store.tokensNotBefore([])).toEqual(new Map());
    });

    it("revocation: a later revocation moves the stamp forward; a moderator's is audited (the person, no incident), the person's own is not", async () => {
      const store = ctx.store();
      const cat = person('cat');
      const first = await store.revokeTokens(cat);
      await ctx.passTime(first);
      const second = await store.revokeTokens(cat, 'mod-ann');
      expect(second.getTime()).toBeGreaterThan(first.getTime());
      expect((await store.tokensNotBefore([cat])).get(cat)).toEqual(second);
      const lines = (await store.listAudit({ limit: 50 })).filter((l) => l.target === cat);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        id: `revoke:${cat}:${second.getTime()}`,
        actor: 'mod-ann',
        action: 'user.revoke_tokens',
        target: cat,
      });
      expect(lines[0]?.incidentId).toBeUndefined();
    });
  });
}
