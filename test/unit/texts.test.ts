/**
 * Every template in every language (src/texts/templates/): the same arguments everywhere, every text
 * rendered with every variable, and within two SMS segments for worst-case values, counted by the
 * sms-segments-calculator package (what Twilio's own calculator uses).
 */
import fc from 'fast-check';
import { IntlMessageFormat } from 'intl-messageformat';
import { SegmentedMessage } from 'sms-segments-calculator';
import { describe, expect, it } from 'vitest';
import { incidentReference, isLanguage, isTimeZone, LANGUAGES, type Language } from '../../src/domain/locale.js';
import { mapLink } from '../../src/domain/messages.js';
import { smsSegments } from '../../src/domain/sms-segments.js';
import { CATALOG, TEMPLATE_NAMES } from '../../src/texts/catalog.js';
import {
  allClearMessage,
  closedMessage,
  enrolmentMessage,
  movedMessage,
  panicMessage,
  sosMessage,
  textTime,
  TEXT_SEGMENTS,
  type TextContext,
} from '../../src/texts/render.js';

const deadline = new Date('2030-12-31T23:59:30.000Z');
// the longest coordinates a link can carry, and the longest zone name a time can carry (GMT+13:45)
const farPoint = { lat: -89.99999, lng: -179.99999 };
const longestZone = 'Pacific/Chatham';
const ref = incidentReference('inc_0123456789abcdef');

/** The arguments a template uses (names, flags, nested in select/plural branches). */
function argumentsOf(message: string): string[] {
  const names = new Set<string>();
  const walk = (nodes: unknown[]): void => {
    for (const n of nodes as { value?: unknown; options?: Record<string, { value: unknown[] }> }[]) {
      if (typeof n.value === 'string' && 'type' in (n as object) && (n as { type: number }).type !== 0) names.add(n.value);
      for (const o of Object.values(n.options ?? {})) walk(o.value);
    }
  };
  walk(new IntlMessageFormat(message, 'en').getAst());
  return [...names].sort();
}

/** Every text, rendered with every variable present and `name` for every name. */
function everyText(language: Language, name: string, ctx: Partial<TextContext> = {}) {
  const c: TextContext = { language, timeZone: longestZone, reference: ref, ...ctx };
  const lastSeen = { point: farPoint, ageMs: (99 * 60 + 59) * 60_000 };
  return {
    sos: sosMessage({ personName: name, locationName: name, meetingName: name, lastSeen, deadline }, c),
    sosArmedPoint: sosMessage({ personName: name, locationName: name, meetingName: name, location: farPoint, deadline }, c),
    panic: panicMessage({ personName: name, locationName: name, note: name, lastSeen, raisedAt: deadline }, c),
    moved: movedMessage({ personName: name, lastSeen }, c),
    allClear: allClearMessage({ personName: name }, c),
    closed: closedMessage({ personName: name }, c),
    enrolment: enrolmentMessage({ personName: name }, c),
  };
}

const segmentsOf = (body: string) => new SegmentedMessage(body);

describe('templates', () => {
  it('every language has every template, with the same arguments as English', () => {
    for (const language of LANGUAGES) {
      expect(Object.keys(CATALOG[language]).sort()).toEqual([...TEMPLATE_NAMES].sort());
      for (const name of TEMPLATE_NAMES)
        expect(argumentsOf(CATALOG[language][name]), `${language}.${name}`).toEqual(argumentsOf(CATALOG.en[name]));
    }
  });

  it('every template is written in the GSM-7 alphabet (a single other character makes the whole text UCS-2)', () => {
    for (const language of LANGUAGES)
      for (const name of TEMPLATE_NAMES)
        expect(segmentsOf(CATALOG[language][name]).getNonGsmCharacters(), `${language}.${name}`).toEqual([]);
  });
});

describe('every text in every language', () => {
  for (const language of LANGUAGES) {
    it(`${language}: renders every variable (time in the zone, link, reference), no argument left over`, () => {
      const texts = everyText(language, 'Alice');
      const time = textTime(deadline, language, longestZone);
      expect(time).toBe('2031-01-01 13:44 GMT+13:45');
      for (const [kind, body] of Object.entries(texts)) {
        expect(body, kind).not.toMatch(/[{}#]/u);
        expect(body, kind).toContain('Alice');
        if (kind !== 'enrolment') expect(body, kind).toContain(`Ref ${ref}`);
      }
      for (const kind of ['sos', 'sosArmedPoint', 'panic'] as const) expect(texts[kind], kind).toContain(time);
      for (const kind of ['sos', 'sosArmedPoint', 'panic', 'moved'] as const) expect(texts[kind], kind).toContain(mapLink(farPoint));
      expect(texts.enrolment).toContain('YES');
      expect(texts.enrolment).toContain('STOP');
    });

    it(`${language}: within ${TEXT_SEGMENTS} GSM-7 segments with names of any length (500 characters, accents, brackets)`, () => {
      for (const name of ['N'.repeat(500), 'Ñüé Müller-Ørsted '.repeat(30), '[Joe] {the} ~boss~ '.repeat(30)]) {
        for (const [kind, body] of Object.entries(everyText(language, name))) {
          const m = segmentsOf(body);
          expect(m.encodingName, `${kind}: ${body}`).toBe('GSM-7');
          expect(m.segmentsCount, `${kind}: ${body}`).toBeLessThanOrEqual(TEXT_SEGMENTS);
          // the link, the time and the reference are never what gets cut
          if (kind !== 'enrolment') expect(body).toContain(`Ref ${ref}`);
        }
      }
    });

    it(`${language}: realistic texts keep short names whole`, () => {
      const texts = everyText(language, 'María José Fernández', { timeZone: 'Europe/Madrid' });
      for (const [kind, body] of Object.entries(texts)) expect(body, kind).toContain('María José Fernández');
    });
  }

  it('a name in a script GSM-7 lacks makes the text UCS-2: still one message, names shortened as far as the floor allows', () => {
    for (const language of LANGUAGES)
      for (const [kind, body] of Object.entries(everyText(language, '東京駅'.repeat(100)))) {
        expect(segmentsOf(body).encodingName, kind).toBe('UCS-2');
        expect(body.length, kind).toBeLessThanOrEqual(459);
      }
  });

  it('Spanish is Spanish, with the time in the person’s zone as Spanish names it', () => {
    const body = sosMessage(
      { personName: 'Ana', locationName: 'Café Central', deadline: new Date('2030-06-01T18:45:00Z') },
      { language: 'es', timeZone: 'Europe/Madrid', reference: 'K7Q-2MX' },
    );
    expect(body).toBe(
      'SOS de Vigil: Ana no ha confirmado que esta bien en Café Central. Su plazo vencio el 2030-06-01 20:45 CEST. ' +
        'No compartio su ubicacion. Llamele; si no contesta, llame a emergencias. Ref K7Q-2MX',
    );
  });
});

describe('smsSegments (the fast count the texts are shortened by)', () => {
  it('agrees with sms-segments-calculator (fast-check)', () => {
    const pieces = fc.constantFrom('a', 'é', 'ñ', '[', '€', '{', 'á', '東', '😀', ' ', '\n', 'Z', '~', '¿');
    fc.assert(
      fc.property(fc.array(pieces, { maxLength: 420 }), (chars) => {
        const text = chars.join('');
        const m = segmentsOf(text);
        expect(smsSegments(text), JSON.stringify(text)).toEqual({ encoding: m.encodingName, segments: text === '' ? 1 : m.segmentsCount });
      }),
      { numRuns: 300 },
    );
  });
});

describe('language, time zone, reference', () => {
  it('knows the languages it has templates for, and IANA zone names only', () => {
    expect(LANGUAGES.every(isLanguage)).toBe(true);
    expect(isLanguage('fr')).toBe(false);
    for (const z of ['UTC', 'Europe/Madrid', 'America/Argentina/Buenos_Aires', 'Asia/Kolkata', 'Etc/GMT+5'])
      expect(isTimeZone(z), z).toBe(true);
    for (const z of ['', 'Mars/Base', '+05:30', 'GMT+5:30', 'Europe/Madrid\n', 'x'.repeat(80), '../etc/passwd'])
      expect(isTimeZone(z), z).toBe(false);
  });

  it('says UTC times as before when no zone is set', () => {
    expect(textTime(new Date('2030-06-01T18:45:30Z'))).toBe('2030-06-01 18:45 UTC');
  });

  it('the reference is short, readable over the phone, stable, and differs between incidents', () => {
    expect(incidentReference('inc_a')).toBe(incidentReference('inc_a'));
    expect(incidentReference('inc_a')).toMatch(/^[0-9A-HJKMNP-TV-Z]{3}-[0-9A-HJKMNP-TV-Z]{3}$/u);
    const refs = new Set(Array.from({ length: 10_000 }, (_, i) => incidentReference(`inc_${i}`)));
    expect(refs.size).toBe(10_000);
  });
});
