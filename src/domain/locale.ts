/**
 * Language, time zone and incident reference of the texts contacts get. Pure.
 * The texts themselves are ICU templates, one file per language (src/texts/templates/).
 */
import { createHash } from 'node:crypto';

/** Languages a contact can get texts in; the first is the default. */
export const LANGUAGES = ['en', 'es'] as const;
export type Language = (typeof LANGUAGES)[number];
export const DEFAULT_LANGUAGE: Language = 'en';
/** Times in texts are in UTC unless the person gave their time zone. */
export const DEFAULT_TIME_ZONE = 'UTC';

export const isLanguage = (s: string): s is Language => (LANGUAGES as readonly string[]).includes(s);

/** Whether `s` is an IANA time zone name this runtime knows (`Europe/Madrid`, `America/Argentina/Buenos_Aires`, `UTC`). */
export function isTimeZone(s: string): boolean {
  // Intl also takes offsets (`+05:30`) and is lenient about case: only names, as the IANA database spells them
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+){0,2}$/.test(s) || s.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: s });
    return true;
  } catch {
    return false;
  }
}

/** The person's defaults for their contacts' texts (set with their contact list). */
export interface ContactSettings {
  /** the language of a contact who has none of their own */
  language?: Language;
  /** IANA name: times in texts are said in it */
  timeZone?: string;
}

/** The language a contact's texts are in: their own, else the person's default, else English. */
export const languageOf = (contact: { language?: Language } | undefined, settings: ContactSettings): Language =>
  contact?.language ?? settings.language ?? DEFAULT_LANGUAGE;

// Crockford's base 32 without I, L, O, U: nothing a contact can misread over the phone
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * The short reference of an incident (`K7Q-2MX`): contacts quote it to moderators, who see it on the
 * incident. Derived from the id (30 bits of its SHA-256), so it needs no storage and never changes;
 * it names an incident among the open and recent ones, not among all of them forever.
 */
export function incidentReference(incidentId: string): string {
  const h = createHash('sha256').update(`vigil/incident-ref\u0000${incidentId}`).digest();
  let n = h.readUInt32BE(0) >>> 2;
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = (ALPHABET[n & 31] ?? '0') + out;
    n >>>= 5;
  }
  return `${out.slice(0, 3)}-${out.slice(3)}`;
}
