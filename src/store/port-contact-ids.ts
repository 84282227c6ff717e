/**
 * Re-keying stored contact ids (docs/security.md, "Contact ids"). The store records which
 * scheme its contact ids were derived with: the legacy SHA-256, or a key's fingerprint. At
 * start-up, before the service serves or dispatches, the ids are moved to the configured key.
 */
import type { ContactIdKey } from '../domain/contact.js';

/** One step of a re-key, for progress logs (and for tests that stop a re-key between two steps). */
export type RekeyStep =
  /** a person's map of old to new ids is decided (MongoDB: recorded, so a resumed re-key uses the same one) */
  | { step: 'mapped'; userId: string; ids: number }
  /** one delivery (and its audit lines) moved to its new key */
  | { step: 'delivery'; userId: string }
  /** everything of the person is re-keyed */
  | { step: 'person'; userId: string };

export interface RekeyResult {
  /** what the ids were derived with before: `sha256`, a key's fingerprint; the key's own when there was nothing to do */
  from: string;
  to: string;
  people: number;
  contacts: number;
  deliveries: number;
  audit: number;
}

export interface ContactIdStore {
  /**
   * Move every stored contact id (contacts, deliveries with their keys and message ids, audit
   * lines) to `key`: from the legacy hash or from `key.previousFingerprint`, resuming a re-key that
   * was interrupted. One read when the ids are `key`'s already. Throws ContactIdKeyMismatch when
   * they were derived with another key. Idempotent; crash-safe (SQLite: one transaction; MongoDB:
   * a journal per person). Only while no other process dispatches (docs/operating.md).
   */
  rekeyContactIds(key: ContactIdKey, onStep?: (s: RekeyStep) => void): Promise<RekeyResult>;
}
