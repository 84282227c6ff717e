/**
 * SMS texts. Pure. Bodies stay within MAX_SMS_CHARS (3 concatenated GSM-7 segments of
 * 153 characters); long place and person names are shortened, never the map link.
 * Our own text is GSM-7; a name in another script makes the carrier switch to UCS-2
 * (67 characters a segment), which costs more segments but is still one message.
 */
import type { GeoPoint } from './timer.js';

export const MAX_SMS_CHARS = 459;

/**
 * Shorten to at most `n` UTF-16 units (what an SMS segment counts), cutting between
 * code points (never half an emoji) and marking the cut with GSM-7 dots.
 */
const clip = (s: string, n: number): string => {
  if (s.length <= n) return s;
  let out = '';
  for (const ch of s) {
    if (out.length + ch.length > n - 3) break;
    out += ch;
  }
  return `${out}...`;
};

export const mapLink = (p: GeoPoint): string => `https://maps.google.com/?q=${p.lat.toFixed(5)},${p.lng.toFixed(5)}`;

export interface SosFacts {
  personName?: string;
  locationName?: string;
  location?: GeoPoint;
  deadline: Date;
}

export function sosMessage(f: SosFacts): string {
  const who = clip(f.personName?.trim() || 'A Vigil user', 60);
  const where = f.locationName ? ` at ${clip(f.locationName.trim(), 80)}` : '';
  const map = f.location ? ` Last known location: ${mapLink(f.location)}` : ' No location was shared.';
  const when = f.deadline.toISOString().slice(0, 16).replace('T', ' ');
  const body = `SOS from Vigil: ${who} did not check in after a meeting${where}. Their safety timer ran out at ${when} UTC.${map} Please try to reach them now; call local emergency services if you cannot.`;
  return clip(body, MAX_SMS_CHARS);
}

export function allClearMessage(f: Pick<SosFacts, 'personName'>): string {
  const who = clip(f.personName?.trim() || 'The Vigil user', 60);
  return clip(`Vigil update: ${who} has checked in and says they are safe. Please disregard the earlier SOS alert.`, MAX_SMS_CHARS);
}

/** For logs and events: keep the leading `+`, the first digit and the last two digits only. */
export function maskPhone(phone: string): string {
  if (phone.length <= 5) return '***';
  return `${phone.slice(0, 2)}${'*'.repeat(phone.length - 4)}${phone.slice(-2)}`;
}
