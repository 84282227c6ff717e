/**
 * Emergency contacts. Pure. A contact's id is a keyed hash (HMAC-SHA-256 with a server
 * secret, CONTACT_ID_KEY) of the person and the number: stable for the same person and number,
 * so a re-saved list keeps its delivery keys, and useless to anyone without the key. It
 * outlives retention (delivery keys, audit lines, logs keep it after the number is masked),
 * so a plain hash would give the number back to whoever tries every number (docs/security.md).
 */
import { createHmac } from 'node:crypto';
import type { Language } from './locale.js';

export interface Contact {
  /** `ContactIdKey.of(userId, phone)`: stable for the same person and number */
  id: string;
  name: string;
  /** E.164 */
  phone: string;
  /** the language their texts are in; absent: the person's default (ContactSettings), else English */
  language?: Language;
  /** where the contact stands (the store always says; absent in a list being saved: kept, or `pending` when new) */
  state?: ContactState;
}

/**
 * Where a contact stands. `pending`: added, has not answered; `confirmed`: answered yes;
 * `declined`: refused being a contact; `opted_out`: their number refuses our texts (STOP, or the
 * carrier says so: Twilio 21610). Saving the list again keeps each remaining contact's state.
 */
export const CONTACT_STATES = ['pending', 'confirmed', 'declined', 'opted_out'] as const;
export type ContactState = (typeof CONTACT_STATES)[number];
export const isContactState = (s: string): s is ContactState => (CONTACT_STATES as readonly string[]).includes(s);
export const stateOf = (c: Pick<Contact, 'state'>): ContactState => c.state ?? 'pending';

/** What a contact's SOS delivery is recorded with when it is held back (never sent): `held_contact_<state>`. */
export type WithheldState = Extract<ContactState, 'declined' | 'opted_out'>;
export const withheldError = (state: WithheldState): string => `held_contact_${state}`;

/**
 * Who an SOS goes to: confirmed and pending contacts (safety first: a contact who has not
 * answered yet still hears about an emergency), in the person's order; never a contact who
 * declined or whose number opted out — their delivery is recorded as held, with the reason.
 */
export function sosAudience(contacts: Contact[]): { reach: Contact[]; withheld: { contact: Contact; held: string }[] } {
  const reach: Contact[] = [];
  const withheld: { contact: Contact; held: string }[] = [];
  for (const c of contacts) {
    const s = stateOf(c);
    if (s === 'declined' || s === 'opted_out') withheld.push({ contact: c, held: withheldError(s) });
    else reach.push(c);
  }
  return { reach, withheld };
}

export const E164 = /^\+[1-9]\d{6,14}$/;
export const MAX_CONTACTS = 5;

/** What stored contact ids were derived with before keyed ids: a plain SHA-256 of person and number. */
export const LEGACY_CONTACT_ID_SCHEME = 'sha256';

/** Derives contact ids with one server key; the store records which key its ids were derived with. */
export interface ContactIdKey {
  /** the id of `phone` in `userId`'s list */
  of(userId: string, phone: string): string;
  /** the id that replaces `oldId` (derived with another scheme) when its number is gone (masked by retention) */
  rewrap(oldId: string): string;
  /**
   * The name a person keeps in the audit, their incidents and texts once they erased their data
   * (`DELETE /v1/me`): `p_` and 16 hex digits of an HMAC of the user id with the same key, so it
   * cannot be turned back into the id without the key (docs/privacy.md, "Your data").
   */
  pseudonym(userId: string): string;
  /** names the key without revealing it (an HMAC of a fixed label); stored with the ids it derived */
  readonly fingerprint: string;
  /** the fingerprint of the key it replaces (CONTACT_ID_KEY_PREVIOUS): ids derived with it are re-keyed */
  readonly previousFingerprint?: string;
}

const hmac = (key: string, label: string, ...parts: string[]): string =>
  createHmac('sha256', key)
    .update([label, ...parts].join('\u0000'))
    .digest('hex');

const fingerprintOf = (key: string): string => `hmac:${hmac(key, 'vigil/contact-id-key/fingerprint').slice(0, 16)}`;

/** Contact ids derived with `key` (CONTACT_ID_KEY); `previous` is the key it replaces during a rotation. */
export function contactIdKey(key: string, previous?: string): ContactIdKey {
  if (previous !== undefined && previous === key) throw new Error('the previous contact id key must differ from the key');
  return {
    // same shape as before (`c_` and 16 hex digits): the id is opaque to clients
    of: (userId, phone) => `c_${hmac(key, 'vigil/contact-id', userId, phone).slice(0, 16)}`,
    rewrap: (oldId) => `c_${hmac(key, 'vigil/contact-id/rewrap', oldId).slice(0, 16)}`,
    pseudonym: (userId) => `p_${hmac(key, 'vigil/pseudonym', userId).slice(0, 16)}`,
    fingerprint: fingerprintOf(key),
    ...(previous === undefined ? {} : { previousFingerprint: fingerprintOf(previous) }),
  };
}

/**
 * The stored ids were derived with a key that is neither CONTACT_ID_KEY nor CONTACT_ID_KEY_PREVIOUS:
 * re-keying them would silently follow a mistyped or lost key, so start-up stops instead.
 */
export class ContactIdKeyMismatch extends Error {
  override name = 'ContactIdKeyMismatch';
}

/**
 * Whether ids stored under `scheme` need a re-key to `key` (false: they are `key`'s already).
 * Throws ContactIdKeyMismatch unless they were derived with the legacy hash or the key's previous key.
 */
export function needsRekey(scheme: string, key: ContactIdKey): boolean {
  if (scheme === key.fingerprint) return false;
  if (scheme === LEGACY_CONTACT_ID_SCHEME || scheme === key.previousFingerprint) return true;
  throw new ContactIdKeyMismatch(
    `CONTACT_ID_KEY: the stored contact ids were derived with another key (fingerprint ${scheme}; this key's is ${key.fingerprint}` +
      `${key.previousFingerprint ? `, CONTACT_ID_KEY_PREVIOUS's ${key.previousFingerprint}` : ''}). ` +
      'Start with the key they were derived with, or set that key as CONTACT_ID_KEY_PREVIOUS to re-key them (docs/operating.md, "Rotating CONTACT_ID_KEY")',
  );
}

/** A person's stored contact ids, and whether a number is still known for each. */
export interface StoredContactId {
  id: string;
  /** the number, when a row still holds it unmasked (a contact, a delivery not anonymised yet) */
  phone?: string;
}

/**
 * The new id of each of a person's stored ids: derived again from the number where one is
 * known, else the old id wrapped with the key. One map per person, so every row holding an id
 * (the contact, each delivery of each incident, their audit lines) moves to the same new id.
 */
export function rekeyMap(userId: string, stored: StoredContactId[], key: ContactIdKey): Map<string, string> {
  const phones = new Map<string, string | undefined>();
  for (const s of stored) if (!phones.has(s.id) || (phones.get(s.id) === undefined && s.phone)) phones.set(s.id, s.phone);
  const out = new Map<string, string>();
  for (const [id, phone] of phones) out.set(id, phone ? key.of(userId, phone) : key.rewrap(id));
  return out;
}
