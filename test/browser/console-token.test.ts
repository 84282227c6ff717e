/** The console's client-side token check: it refuses before any socket or request is made. */
import { describe, expect, it } from 'vitest';
import { checkModeratorToken } from '../../src/console/client/token.js';
import { signToken } from '../../src/auth/tokens.js';

const SECRET = 's'.repeat(40);
const NOW = Date.now();

describe('checkModeratorToken', () => {
  it('accepts a moderator token, with or without the Bearer prefix', () => {
    const t = signToken(SECRET, { sub: 'mod', admin: true, name: 'Mona' });
    for (const raw of [t, `  Bearer ${t}\n`]) {
      const r = checkModeratorToken(raw, NOW);
      expect(r).toMatchObject({ ok: true, token: t, claims: { sub: 'mod', admin: true, name: 'Mona' } });
    }
  });

  it("refuses a person's token and names the person", () => {
    const r = checkModeratorToken(signToken(SECRET, { sub: 'alice' }), NOW);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/“alice”, who is not a moderator/);
  });

  it('refuses an expired token', () => {
    const r = checkModeratorToken(signToken(SECRET, { sub: 'mod', admin: true }, 60), NOW + 61_000);
    expect(!r.ok && r.reason).toMatch(/expired/);
  });

  it('refuses what is not a JWT', () => {
    for (const raw of [
      '',
      'abc',
      'a.b',
      'a.%%%.c',
      `x.${Buffer.from('"str"').toString('base64url')}.y`,
      `x.${Buffer.from('{"role":"admin"}').toString('base64url')}.y`,
    ]) {
      expect(checkModeratorToken(raw, NOW).ok).toBe(false);
    }
  });

  it('reads UTF-8 names', () => {
    const r = checkModeratorToken(signToken(SECRET, { sub: 'mod', admin: true, name: 'Zoë Ødegård' }), NOW);
    expect(r.ok && r.claims.name).toBe('Zoë Ødegård');
  });
});
