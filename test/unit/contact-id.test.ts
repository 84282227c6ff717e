/**
 * Threat "anonymised numbers can be recovered" (docs/security.md, "Contact ids"): a contact id
 * outlives retention, so it must not be a hash anyone can recompute from a guessed number.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { contactIdKey, ContactIdKeyMismatch, LEGACY_CONTACT_ID_SCHEME, needsRekey, rekeyMap } from '../../src/domain/contact.js';

const key = () => randomBytes(32).toString('hex');
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe('contact ids are keyed', () => {
  it('threat: the id is not SHA-256 of person and number, and cannot be recomputed without the key', () => {
    const secret = key();
    const ids = contactIdKey(secret);
    const id = ids.of('alice', '+14155550101');
    expect(id).toMatch(/^c_[0-9a-f]{16}$/);
    // what an attacker without the key could try: every plain hash of person and number
    for (const guess of ['alice\u0000+14155550101', 'alice+14155550101', '+14155550101', 'alice:+14155550101'])
      expect(id.slice(2)).not.toBe(sha(guess).slice(0, 16));
    // the same key derives the same id (a re-saved list keeps its delivery keys); another key another id
    expect(contactIdKey(secret).of('alice', '+14155550101')).toBe(id);
    expect(contactIdKey(key()).of('alice', '+14155550101')).not.toBe(id);
    expect(ids.of('bob', '+14155550101')).not.toBe(id);
  });

  it('the fingerprint names the key without revealing it', () => {
    const secret = key();
    const ids = contactIdKey(secret, key());
    expect(ids.fingerprint).not.toContain(secret.slice(0, 8));
    expect(ids.fingerprint).toBe(contactIdKey(secret).fingerprint);
    expect(ids.previousFingerprint).toBeDefined();
    expect(() => contactIdKey(secret, secret)).toThrow();
  });

  it('re-key: from the legacy hash or the previous key only; a stranger key is refused', () => {
    const old = key();
    const ids = contactIdKey(key(), old);
    expect(needsRekey(LEGACY_CONTACT_ID_SCHEME, ids)).toBe(true);
    expect(needsRekey(contactIdKey(old).fingerprint, ids)).toBe(true);
    expect(needsRekey(ids.fingerprint, ids)).toBe(false);
    expect(() => needsRekey(contactIdKey(key()).fingerprint, ids)).toThrow(ContactIdKeyMismatch);
  });

  it('re-key map: one new id per old id, from the number when any row still holds it, else the old id wrapped', () => {
    const ids = contactIdKey(key());
    const map = rekeyMap(
      'alice',
      [
        { id: 'c_old1' }, // an anonymised text first …
        { id: 'c_old1', phone: '+14155550101' }, // … then the contact: the number decides
        { id: 'c_old2' },
      ],
      ids,
    );
    expect(map).toEqual(
      new Map([
        ['c_old1', ids.of('alice', '+14155550101')],
        ['c_old2', ids.rewrap('c_old2')],
      ]),
    );
  });
});
