/**
 * The per-replica cache of "tokens not before" stamps (src/app/token-revocations.ts) and the
 * rule that reads them (src/auth/tokens.ts `isRevoked`), with a plain object for the store:
 * a cached answer serves requests for `cacheMs` at most; a revocation made here is seen at
 * once, and a read that started before it cannot take it back; handshakes read fresh;
 * concurrent lookups of one person share one store read; the cache is bounded.
 */
import { describe, expect, it } from 'vitest';
import { TokenRevocations } from '../../src/app/token-revocations.js';
import { isRevoked } from '../../src/auth/tokens.js';
import type { TokenStore } from '../../src/store/port-tokens.js';

/** A store in memory that counts its reads and can hold one back. */
function memoryStore() {
  const stamps = new Map<string, Date>();
  let clock = 1_700_000_000_000;
  const reads: string[][] = [];
  let hold: Promise<void> | undefined;
  const store: TokenStore = {
    async revokeTokens(userId) {
      clock += 1000;
      stamps.set(userId, new Date(clock));
      return new Date(clock);
    },
    async tokensNotBefore(userIds) {
      reads.push([...userIds]);
      const answer = new Map(userIds.flatMap((id) => (stamps.has(id) ? [[id, stamps.get(id)!] as const] : [])));
      if (hold) await hold;
      return answer;
    },
  };
  return {
    store,
    reads,
    stamps,
    holdReads() {
      let release = () => undefined as void;
      hold = new Promise<void>((r) => (release = r));
      return () => {
        hold = undefined;
        release();
      };
    },
  };
}

describe('token revocation cache', () => {
  it('isRevoked: a token issued at or before the stamp is revoked, one issued after is not; no iat and a stamp: revoked', () => {
    expect(isRevoked({ issuedAtMs: 5000 }, undefined)).toBe(false);
    expect(isRevoked({}, undefined)).toBe(false);
    expect(isRevoked({ issuedAtMs: 5000 }, 5000)).toBe(true);
    expect(isRevoked({ issuedAtMs: 5000 }, 5999)).toBe(true);
    expect(isRevoked({ issuedAtMs: 6000 }, 5999)).toBe(false);
    expect(isRevoked({}, 1)).toBe(true);
  });

  it('a cached stamp serves requests for cacheMs; fresh reads the store; a revocation here is seen at once and cuts the sockets off', async () => {
    const m = memoryStore();
    const cut: string[] = [];
    const r = new TokenRevocations(m.store, { cacheMs: 60_000, onRevoked: (id) => cut.push(id) });
    expect(await r.notBefore(['ann'])).toEqual(new Map());
    expect(await r.notBefore(['ann'])).toEqual(new Map());
    expect(m.reads).toHaveLength(1);
    // moved elsewhere (another replica): the cache answers from before, within its bound
    await m.store.revokeTokens('ann');
    expect(await r.notBefore(['ann'])).toEqual(new Map());
    // a handshake reads fresh
    expect((await r.notBefore(['ann'], { fresh: true })).get('ann')).toBe(m.stamps.get('ann')?.getTime());
    // moved here: seen at once, sockets cut off
    const stamp = await r.revoke('bob', 'mod-1');
    const before = m.reads.length;
    expect((await r.notBefore(['bob'])).get('bob')).toBe(stamp.getTime());
    expect(m.reads).toHaveLength(before);
    expect(cut).toEqual(['bob']);
  });

  it('with cacheMs 0 every lookup reads the store; one lookup of many people is one read', async () => {
    const m = memoryStore();
    const r = new TokenRevocations(m.store, { cacheMs: 0 });
    await r.notBefore(['a']);
    await r.notBefore(['a']);
    await r.notBefore(['a', 'b', 'c', 'a']);
    expect(m.reads).toEqual([['a'], ['a'], ['a', 'b', 'c']]);
  });

  it("concurrent lookups of one person share one read; a read that began before this replica's revocation does not take it back", async () => {
    const m = memoryStore();
    const r = new TokenRevocations(m.store, { cacheMs: 60_000 });
    const release = m.holdReads();
    const lookups = Promise.all([r.notBefore(['cat']), r.notBefore(['cat']), r.notBefore(['cat'])]);
    expect(m.reads).toEqual([['cat']]);
    // the read (no stamp) is still on its way when this replica revokes
    const revoking = r.revoke('cat');
    release();
    const [stamp] = await Promise.all([revoking, lookups]);
    expect((await r.notBefore(['cat'])).get('cat')).toBe(stamp.getTime());
  });

  it('holds at most maxCached people: the oldest leave first', async () => {
    const m = memoryStore();
    const r = new TokenRevocations(m.store, { cacheMs: 60_000, maxCached: 2 });
    await r.notBefore(['a']);
    await r.notBefore(['b']);
    await r.notBefore(['c']);
    const before = m.reads.length;
    await r.notBefore(['b']);
    await r.notBefore(['c']);
    expect(m.reads).toHaveLength(before);
    await r.notBefore(['a']);
    expect(m.reads).toHaveLength(before + 1);
  });
});
