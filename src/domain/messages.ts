/**
 * What goes into an SMS text, pure: person-supplied names made plain (no links, no control
 * characters), shortening, the map link, masked numbers. The texts themselves are templates,
 * one file per language (src/texts/). A body never exceeds MAX_SMS_CHARS (3 concatenated GSM-7
 * segments of 153 characters); src/texts keeps it within two segments where the names allow.
 */
import type { GeoPoint } from './timer.js';

export const MAX_SMS_CHARS = 459;

/**
 * Shorten to at most `n` UTF-16 units (what an SMS segment counts), cutting between
 * code points (never half an emoji) and marking the cut with GSM-7 dots.
 */
export const clip = (s: string, n: number): string => {
  if (s.length <= n) return s;
  let out = '';
  for (const ch of s) {
    if (out.length + ch.length > n - 3) break;
    out += ch;
  }
  return `${out}...`;
};

// C0/C1 controls, bidi embeddings/overrides/isolates and marks, zero-width characters,
// line/paragraph separators: none belongs in a name, and bidi overrides can make a text
// read differently from what it says.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE_CHARS = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/gu;
/**
 * What the API refuses in a name (place, contact): control characters, bidi controls,
 * invisible characters and line separators. Zero-width (non-)joiners stay allowed: Persian,
 * Indic scripts and emoji sequences need them. Links are not refused (a café may be called
 * "cafe.com"); texts defang them (plainName).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const REFUSED_IN_NAMES = /[\u0000-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/u;
export const hasRefusedNameChars = (s: string): boolean => REFUSED_IN_NAMES.test(s);

// Invisible characters that separate nothing (soft hyphens, joiners, variation selectors,
// fillers, tags…): removed, so that `exam\u00adple.com` is seen, and defanged, as the link it shows.
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu;

// A scheme (`https://`, `mailto:`…) or `www.`: dropped (a known scheme also at the end, where
// a text goes on after the name). In a loop: removing one can join the pieces of another (`a:b:////x`).
const SCHEME =
  /[a-z][a-z0-9+.-]*:\/\/|(?<![a-z0-9])(?:https?|ftp|mailto|tel|sms|smsto|mms|geo|javascript|data|intent|market|facetime|callto):(?=\S|$)|(?<![\p{L}\p{N}])www\d{0,3}[.\u2024\u3002\ufe52\uff0e\uff61]/giu;
// a run of hex digits and colons: an IPv6 address when it holds `::` or three colons or more
// (`10:30` and `10:30:15` are times)
const HEX_COLONS = /[0-9a-f:]{3,}/giu;
// the full stop and what IDNA (UTS 46) or NFKC turn into one (fullwidth, ideographic, one dot leader…)
const DOT_CLASS = '.\u2024\u3002\ufe52\uff0e\uff61';
// two or more dots between numbers: an IPv4 address (`93.184.216.34`), never a decimal (`3.5`)
const DOTTED_NUMBERS = new RegExp(`[0-9]+(?:[${DOT_CLASS}][0-9]+){2,}`, 'gu');
// a dot after a name-like character and before a letter, digit, mark or symbol of any script
// (`пример.рф`, `i❤.ws`): a host name's dot, unless it stands between two digits (`3.5`)
const HOST_DOT = new RegExp(`(?<=[^\\s${DOT_CLASS}])[${DOT_CLASS}](?=[\\p{L}\\p{N}\\p{M}\\p{So}])`, 'gu');
const ANY_DOT = new RegExp(`[${DOT_CLASS}]`, 'gu');
const DIGIT = /[0-9]/;

const squeeze = (s: string) => s.replace(/\s+/gu, ' ').trim();

function withoutSchemes(s: string): string {
  for (;;) {
    const next = squeeze(s.replace(SCHEME, ''));
    if (next === s) return s;
    s = next;
  }
}

/**
 * Host names and addresses made unclickable: `example[.]com`, `93[.]184[.]216[.]34`,
 * `fe80[:][:]1`; another kind of dot keeps its look (`例え[。]テスト`).
 */
function defangHosts(s: string): string {
  return s
    .replace(HEX_COLONS, (run) =>
      (run.includes('::') && /[0-9a-f]/iu.test(run)) || run.split(':').length > 3 ? run.replaceAll(':', '[:]') : run,
    )
    .replace(DOTTED_NUMBERS, (run) => run.replace(ANY_DOT, '[$&]'))
    .replace(HOST_DOT, (dot: string, at: number, all: string) =>
      DIGIT.test(all[at - 1] ?? '') && DIGIT.test(all[at + dot.length] ?? '') ? dot : `[${dot}]`,
    );
}

/**
 * What a person-supplied name (place, person, contact, a panic note) becomes inside a text:
 * unsafe characters turned into spaces, invisible ones (every default-ignorable code point)
 * removed, Unicode NFC, whitespace collapsed, and every host-like token defanged — schemes
 * and `www.` dropped, the dots of domain names in any script and of IPv4 addresses written
 * `[.]`, the colons of IPv6 addresses `[:]` — so a text never carries a link we did not
 * write. Applying it twice changes nothing.
 */
export function plainName(s: string): string {
  const visible = squeeze(s.replace(UNSAFE_CHARS, ' ').replace(INVISIBLE, '').normalize('NFC'));
  // NFC again: a dropped scheme may have stood between a letter and its accent
  return squeeze(defangHosts(withoutSchemes(visible).normalize('NFC')));
}

export const mapLink = (p: GeoPoint): string => `https://maps.google.com/?q=${p.lat.toFixed(5)},${p.lng.toFixed(5)}`;

/** A live fix as a text tells it: where, and how long before the text was written. */
export interface LastSeen {
  point: GeoPoint;
  ageMs: number;
}

/** Where and how long ago a fix taken at `fix.at` says the person was, at `now` (none without a fix). */
export const lastSeenAt = (fix: (GeoPoint & { at: Date }) | null | undefined, now: Date | undefined): LastSeen | undefined =>
  fix && now ? { point: { lat: fix.lat, lng: fix.lng }, ageMs: Math.max(0, now.getTime() - fix.at.getTime()) } : undefined;

export interface SosFacts {
  personName?: string;
  locationName?: string;
  location?: GeoPoint;
  /** the freshest live fix, read when the SOS is written; wins over `location` (given at arm time) */
  lastSeen?: LastSeen;
  /** whom they were meeting (only when the deployment sends it to contacts) */
  meetingName?: string;
  deadline: Date;
}

/** For logs and events: keep the leading `+`, the first digit and the last two digits only. */
export function maskPhone(phone: string): string {
  if (phone.length <= 5) return '***';
  return `${phone.slice(0, 2)}${'*'.repeat(phone.length - 4)}${phone.slice(-2)}`;
}
