/** Emergency contacts. Pure. */
import { createHash } from 'node:crypto';

export interface Contact {
  /** stable for the same person and number, so a re-saved list keeps delivery keys */
  id: string;
  name: string;
  /** E.164 */
  phone: string;
}

export const E164 = /^\+[1-9]\d{6,14}$/;
export const MAX_CONTACTS = 5;

export function contactId(userId: string, phone: string): string {
  return `c_${createHash('sha256').update(`${userId}\u0000${phone}`).digest('hex').slice(0, 16)}`;
}
