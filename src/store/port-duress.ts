/**
 * Store port for the duress PIN (docs/security.md, "Duress code"): one slow hash per person,
 * never the PIN. Part of `Store` (./port.ts); each method one atomic write or one read by key.
 */

/** A duress PIN as stored: scrypt output and its per-person salt (both base64), and the scrypt cost used. */
export interface DuressSecret {
  salt: string;
  hash: string;
  /** scrypt's N: kept with the hash so the cost can be raised without losing stored PINs */
  cost: number;
}

export interface DuressStore {
  /** Set or replace the person's duress PIN hash. */
  setDuressPin(userId: string, secret: DuressSecret): Promise<void>;
  /** The person's duress PIN hash; null when they have none. */
  getDuressPin(userId: string): Promise<DuressSecret | null>;
  /** Remove it; whether there was one. */
  deleteDuressPin(userId: string): Promise<boolean>;
}
