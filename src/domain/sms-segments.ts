/**
 * How many segments a carrier bills for a text. Pure, and fast enough to run on every text
 * while it is being shortened (test/unit/texts.test.ts checks it against the
 * sms-segments-calculator package, which is too slow to call per text: milliseconds each).
 * GSM-7 when every character is in the GSM 03.38 alphabet (extension characters cost two
 * septets), else UCS-2 (UTF-16 units; a carrier never splits a surrogate pair across segments).
 */

const GSM_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const GSM_EXTENSION = '\f^{}\\[~]|€';
const BASIC = new Set(GSM_BASIC);
const EXTENSION = new Set(GSM_EXTENSION);

export interface Segments {
  encoding: 'GSM-7' | 'UCS-2';
  segments: number;
}

export function smsSegments(text: string): Segments {
  let septets = 0;
  let gsm = true;
  for (const ch of text) {
    if (BASIC.has(ch)) septets += 1;
    else if (EXTENSION.has(ch)) septets += 2;
    else {
      gsm = false;
      break;
    }
  }
  if (gsm) return { encoding: 'GSM-7', segments: septets <= 160 ? 1 : segmentsOf(text, 153, (ch) => (EXTENSION.has(ch) ? 2 : 1)) };
  const units = text.length;
  return { encoding: 'UCS-2', segments: units <= 70 ? 1 : segmentsOf(text, 67, (ch) => ch.length) };
}

/** Segments of a concatenated text: an escape pair or a surrogate pair never straddles two segments. */
function segmentsOf(text: string, perSegment: number, size: (ch: string) => number): number {
  let segments = 1;
  let used = 0;
  for (const ch of text) {
    const n = size(ch);
    if (used + n > perSegment) {
      segments++;
      used = 0;
    }
    used += n;
  }
  return segments;
}
