/**
 * No text carries a link we did not write. A person's name, a place, whom they meet and a panic
 * note reach the contacts' phones, which make anything that looks like a link tappable. The
 * detector below approximates what phones link (a scheme, `www.`, a domain in any script with
 * any of the dots IDNA accepts, IPv4 and IPv6 literals); it is deliberately looser than any
 * phone, so the property is stronger than what phones need.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mapLink, plainName } from '../../src/domain/messages.js';
import { allClearMessage, closedMessage, movedMessage, panicMessage, sosMessage } from '../../src/texts/render.js';

/** The full stop and the characters IDNA (UTS 46) or NFKC turn into one. */
const DOT = '[.\\u2024\\u3002\\ufe52\\uff0e\\uff61]';
const LABEL_CHAR = '[\\p{L}\\p{N}\\p{M}\\p{So}_-]';

const DETECTORS: [string, RegExp][] = [
  ['scheme://', /[a-z][a-z0-9+.-]*:\/\/\S/iu],
  ['scheme:', /(?<![a-z0-9+.-])(?:https?|ftp|mailto|tel|sms|smsto|mms|geo|javascript|data|intent|market|facetime|callto):\S/iu],
  ['www', new RegExp(`(?<![\\p{L}\\p{N}])www\\d{0,3}${DOT}\\S`, 'iu')],
  // label.tld, the top-level label starting with a letter of any script (пример.рф, xn--p1ai, 例え.テスト)
  ['domain', new RegExp(`${LABEL_CHAR}${DOT}\\p{L}`, 'u')],
  ['IPv4', new RegExp(`\\d{1,3}(?:${DOT}\\d{1,3}){3}`, 'u')],
  ['IPv6', /[0-9a-f]::|::[0-9a-f]|[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){7}/iu],
];

/** What a phone would make tappable in `text` (empty: nothing). */
const linksIn = (text: string): string[] =>
  DETECTORS.flatMap(([name, re]) => {
    const m = re.exec(text);
    return m ? [`${name}: ${m[0]}`] : [];
  });

const INVISIBLE = /\p{Default_Ignorable_Code_Point}/u;

/** Pieces that host names, addresses and the tricks around them are made of. */
const FRAGMENTS = [
  ...['http://', 'HTTPS://', 'hxxp://', 'ftp:', 'mailto:', 'javascript:', 'tel:', '//', 'www.', 'WWW3.', 'www'],
  ...[
    'example',
    'evil',
    'login',
    'com',
    'io',
    'co',
    'uk',
    'пример',
    'рф',
    'испытание',
    '例え',
    'テスト',
    '中国',
    'xn--e1afmkfd',
    'xn--p1ai',
    'ｅｘａｍｐｌｅ',
    'ｃｏｍ',
    '😀',
    'é',
    'e\u0301',
  ],
  ...['93', '184', '216', '34', '1', '255', '0', '10', '３', 'fe80', '2001', 'db8', 'ffff', 'a', 'B'],
  ...['.', '.', '.', '。', '．', '｡', '․', '﹒', ':', '::', ':', '/', '@', '-', '_', '[', ']', ' ', ' ', '\n', '\u00a0', '?', '#', '%2e'],
  // invisible: soft hyphen, zero width space/joiners, word joiner, BOM, CGJ, Mongolian vowel separator, Hangul filler, variation selector, tag letters
  ...['\u00ad', '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u034f', '\u180e', '\u3164', '\ufe0f', '\u{e0041}', '\u202e', '\u2066'],
];
const hostish = fc.array(fc.constantFrom(...FRAGMENTS), { maxLength: 24 }).map((parts) => parts.join(''));
const anyText = fc.oneof(hostish, fc.string({ unit: 'binary', maxLength: 60 }), fc.string({ unit: 'grapheme', maxLength: 40 }));

describe('plainName: no link and nothing invisible survives', () => {
  it.each([
    ['a bare IPv4 address with a path', '93.184.216.34/login'],
    ['an IPv4 address in full-width dots', '93．184．216．34'],
    ['an IPv6 literal', 'go to [2001:db8::1]/x'],
    ['a compressed IPv6 address', 'fe80::1'],
    ['an IPv4-mapped IPv6 address', '::ffff:93.184.216.34'],
    ['a Cyrillic domain', 'пример.com'],
    ['a domain with a non-Latin top level', 'пример.рф'],
    ['punycode', 'xn--e1afmkfd.xn--p1ai'],
    ['an ideographic full stop', 'example。com'],
    ['a full-width domain', 'ｅｘａｍｐｌｅ．ｃｏｍ'],
    ['a soft hyphen in the name', 'exam\u00adple.c\u00adom'],
    ['a soft hyphen next to the dot', 'example\u00ad.com'],
    ['a word joiner in the scheme', 'ht\u2060tps://evil.com'],
    ['a scheme rebuilt by removing another', 'a:b:////evil'],
    ['an emoji domain', 'i❤️.ws'],
    ['a mailto link', 'mailto:bob@evil.example'],
  ])('%s: %s', (_what, input) => {
    const out = plainName(input);
    expect(linksIn(out), out).toEqual([]);
    expect(out).not.toMatch(INVISIBLE);
  });

  it('keeps what is not a link as it is written', () => {
    for (const name of ['Café 3.5 Stars', 'St. Mary’s Church', 'Gleis 7, 10:30', 'Dr. Who', 'wait... and see', 'Room 1.2']) {
      expect(plainName(name)).toBe(name);
    }
    expect(plainName('93.184.216.34/login')).toBe('93[.]184[.]216[.]34/login');
    expect(plainName('пример.com')).toBe('пример[.]com');
    expect(plainName('exam\u00adple.com')).toBe('example[.]com');
  });

  it('holds for arbitrary text and for text built from host-like pieces (fast-check)', () => {
    fc.assert(
      fc.property(anyText, (input) => {
        const out = plainName(input);
        expect(linksIn(out), JSON.stringify(out)).toEqual([]);
        expect(INVISIBLE.test(out), JSON.stringify(out)).toBe(false);
        // names are stored plain and made plain again in texts: the second pass changes nothing
        expect(plainName(out)).toBe(out);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('every text carries our map link and no other', () => {
  const deadline = new Date('2030-06-01T18:45:30.000Z');
  const point = { lat: 37.7749, lng: -122.4194 };
  const withoutOurLinks = (body: string) => body.split(mapLink(point)).join(' ');

  it('SOS, panic, moved, all-clear and closed texts (fast-check)', () => {
    fc.assert(
      fc.property(anyText, anyText, anyText, fc.boolean(), (a, b, c, located) => {
        const bodies = [
          sosMessage({ personName: a, locationName: b, meetingName: c, deadline, ...(located ? { location: point } : {}) }),
          panicMessage({ personName: a, locationName: c, note: b, raisedAt: deadline, ...(located ? { location: point } : {}) }),
          movedMessage({ personName: a, lastSeen: { point, ageMs: 120_000 } }),
          allClearMessage({ personName: b }),
          closedMessage({ personName: c }),
        ];
        for (const body of bodies) {
          expect(linksIn(withoutOurLinks(body)), JSON.stringify(body)).toEqual([]);
          expect(INVISIBLE.test(body), JSON.stringify(body)).toBe(false);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
