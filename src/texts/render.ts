/**
 * Every text a contact gets, in their language, with times in the person's time zone and the
 * incident's reference. Templates: ./templates/ (ICU MessageFormat via intl-messageformat,
 * compiled once). Names (person, place, meeting, note) are made plain first (domain/messages.ts:
 * no links, no control characters) and are the only thing shortened: just enough for the text to
 * stay within TEXT_SEGMENTS, never below a floor; the map link, the time and the reference are
 * never cut. Nothing else from outside (and nothing a contact ever sent) is put into a text.
 */
import { IntlMessageFormat } from 'intl-messageformat';
import type { Contact } from '../domain/contact.js';
import {
  DEFAULT_LANGUAGE,
  DEFAULT_TIME_ZONE,
  incidentReference,
  languageOf,
  LANGUAGES,
  type ContactSettings,
  type Language,
} from '../domain/locale.js';
import { clip, mapLink, MAX_SMS_CHARS, plainName, type LastSeen, type SosFacts } from '../domain/messages.js';
import { smsSegments } from '../domain/sms-segments.js';
import type { GeoPoint } from '../domain/timer.js';
import { CATALOG, TEMPLATE_NAMES, type TemplateName } from './catalog.js';

/** A text stays within this many segments for names of any length (GSM-7 names; see docs/sms.md). */
export const TEXT_SEGMENTS = 2;

/** Whom a text goes to and about which incident. */
export interface TextContext {
  language?: Language;
  /** IANA name; times are said in it (default UTC) */
  timeZone?: string;
  /** the incident reference (domain/locale.ts `incidentReference`); absent: not said */
  reference?: string;
}

export interface PanicFacts {
  personName?: string;
  locationName?: string;
  location?: GeoPoint;
  /** the freshest live fix, when the press carried no place */
  lastSeen?: LastSeen;
  raisedAt: Date;
  /** a short line from the person (shortened, name rules applied) */
  note?: string;
}

// every template compiled once, when this module is loaded (a template that does not parse stops start-up)
const COMPILED: Readonly<Record<Language, Readonly<Record<TemplateName, IntlMessageFormat>>>> = Object.freeze(
  Object.fromEntries(
    LANGUAGES.map((l) => [l, Object.freeze(Object.fromEntries(TEMPLATE_NAMES.map((n) => [n, new IntlMessageFormat(CATALOG[l][n], l)])))]),
  ) as Record<Language, Record<TemplateName, IntlMessageFormat>>,
);

function format(language: Language, name: TemplateName, values: Record<string, string | number>): string {
  const out = COMPILED[language][name].format(values);
  if (typeof out !== 'string') throw new Error(`template ${language}.${name} did not render to a string`);
  return out;
}

const pad = (n: string | undefined) => (n ?? '').padStart(2, '0');

/**
 * Formatters by language and time zone. Making an `Intl.DateTimeFormat` costs about 150 µs,
 * which a burst of 10,000 SOS paid once per text (1.6 s of one core); there are a few
 * languages and the zones people use, and the bound keeps a stream of odd zones from growing it.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();
const MAX_FORMATTERS = 512;

function timeFormatter(language: Language, timeZone: string): Intl.DateTimeFormat {
  const key = `${language}|${timeZone}`;
  let f = formatters.get(key);
  if (!f) {
    if (formatters.size >= MAX_FORMATTERS) formatters.clear();
    f = new Intl.DateTimeFormat(language, {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'short',
    });
    formatters.set(key, f);
  }
  return f;
}

/** `2030-06-01 20:45 CEST`: the same unambiguous shape in every language, the zone as the language names it. */
export function textTime(at: Date, language: Language = DEFAULT_LANGUAGE, timeZone: string = DEFAULT_TIME_ZONE): string {
  const parts = timeFormatter(language, timeZone).formatToParts(at);
  const p = (type: Intl.DateTimeFormatPartTypes) => parts.find((x) => x.type === type)?.value;
  return `${p('year')}-${pad(p('month'))}-${pad(p('day'))} ${pad(p('hour'))}:${pad(p('minute'))} ${p('timeZoneName') ?? timeZone}`;
}

/** How long ago a fix was taken, in the language. */
export function ageIn(language: Language, ageMs: number): string {
  const min = Math.floor(Math.max(0, ageMs) / 60_000);
  if (min < 1) return format(language, 'ageNow', {});
  if (min < 60) return format(language, 'ageMinutes', { minutes: min });
  return format(language, 'ageHours', { hours: Math.floor(min / 60), minutes: min % 60 });
}

function whereText(language: Language, f: { location?: GeoPoint; lastSeen?: LastSeen }): string {
  if (f.lastSeen) return format(language, 'lastSeen', { age: ageIn(language, f.lastSeen.ageMs), link: mapLink(f.lastSeen.point) });
  if (f.location) return format(language, 'lastKnown', { link: mapLink(f.location) });
  return format(language, 'noLocation', {});
}

/** The names a text carries, with the longest each may be and the shortest it is cut to. */
type Names = Partial<Record<'who' | 'place' | 'meeting' | 'note', string>>;
const LIMITS = { who: [60, 20], place: [80, 16], meeting: [60, 12], note: [100, 16] } as const;

/**
 * Render `name` with `names` shortened step by step (each to 4/5 of its length, never below its
 * floor) until the text fits TEXT_SEGMENTS; a name in a script GSM-7 lacks may leave it longer,
 * then MAX_SMS_CHARS is the hard limit.
 */
function fitted(language: Language, name: TemplateName, names: Names, values: Record<string, string>): string {
  const plain = Object.fromEntries(Object.entries(names).map(([k, v]) => [k, plainName(v ?? '')])) as Names;
  const max: Record<keyof Names, number> = { who: LIMITS.who[0], place: LIMITS.place[0], meeting: LIMITS.meeting[0], note: LIMITS.note[0] };
  for (;;) {
    const shown: Record<string, string> = {};
    // plain again after the cut: cutting can leave what reads as a link (`mailto:...`)
    for (const k of Object.keys(plain) as (keyof Names)[]) shown[k] = plainName(clip(plain[k] ?? '', max[k]));
    const body = format(language, name, { ...values, ...shown });
    if (smsSegments(body).segments <= TEXT_SEGMENTS) return body;
    let shorter = false;
    for (const k of Object.keys(plain) as (keyof Names)[]) {
      const len = Math.min((plain[k] ?? '').length, max[k]);
      const next = Math.max(LIMITS[k][1], Math.floor((len * 4) / 5));
      if (next < len) {
        max[k] = next;
        shorter = true;
      }
    }
    if (!shorter) return clip(body, MAX_SMS_CHARS);
  }
}

const flag = (s: string | undefined) => (s ? 'yes' : 'no');

function common(ctx: TextContext) {
  const language = ctx.language ?? DEFAULT_LANGUAGE;
  return { language, ref: { hasRef: flag(ctx.reference), ref: ctx.reference ?? '' } };
}

/** The person's name, or what a text calls someone unnamed (`someone`, `theUser`, `theUserLower`). */
function who(language: Language, personName: string | undefined, fallback: 'someone' | 'theUser' | 'theUserLower'): string {
  return plainName(personName ?? '') || format(language, fallback, {});
}

/** The SOS of a timer that ran out. */
export function sosMessage(f: SosFacts, ctx: TextContext = {}): string {
  const { language, ref } = common(ctx);
  const place = plainName(f.locationName ?? '');
  const meeting = plainName(f.meetingName ?? '');
  return fitted(
    language,
    'sos',
    { who: who(language, f.personName, 'someone'), place, meeting },
    {
      ...ref,
      hasPlace: flag(place),
      hasMeeting: flag(meeting),
      time: textTime(f.deadline, language, ctx.timeZone),
      where: whereText(language, f),
    },
  );
}

/** The SOS of a panic button press. */
export function panicMessage(f: PanicFacts, ctx: TextContext = {}): string {
  const { language, ref } = common(ctx);
  const place = plainName(f.locationName ?? '');
  const note = plainName(f.note ?? '');
  return fitted(
    language,
    'panic',
    { who: who(language, f.personName, 'someone'), place, note },
    {
      ...ref,
      hasPlace: flag(place),
      hasNote: flag(note),
      time: textTime(f.raisedAt, language, ctx.timeZone),
      where: whereText(language, f),
    },
  );
}

/** The one follow-up after the SOS when the person has moved far from where the SOS said. */
export function movedMessage(f: Pick<SosFacts, 'personName'> & { lastSeen: LastSeen }, ctx: TextContext = {}): string {
  const { language, ref } = common(ctx);
  return fitted(language, 'moved', { who: who(language, f.personName, 'theUser') }, { ...ref, where: whereText(language, f) });
}

/** The person checked in after the SOS. */
export function allClearMessage(f: Pick<SosFacts, 'personName'>, ctx: TextContext = {}): string {
  const { language, ref } = common(ctx);
  return fitted(language, 'allClear', { who: who(language, f.personName, 'theUser') }, ref);
}

/** A moderator closed the SOS: over, without saying the person checked in (they did not). */
export function closedMessage(f: Pick<SosFacts, 'personName'>, ctx: TextContext = {}): string {
  const { language, ref } = common(ctx);
  return fitted(language, 'closed', { who: who(language, f.personName, 'theUserLower') }, ref);
}

/** The one text a new contact gets: who added them, what it means, how to answer. */
export function enrolmentMessage(f: Pick<SosFacts, 'personName'>, ctx: TextContext = {}): string {
  const { language } = common(ctx);
  return fitted(language, 'enrolment', { who: who(language, f.personName, 'someone') }, {});
}

/**
 * The texts of one incident, one body per language asked for (rendered once each): `render` gets
 * the context of that language with the person's time zone and the incident's reference.
 */
export function perLanguage(
  settings: ContactSettings,
  incidentId: string | undefined,
  render: (ctx: TextContext) => string,
): (contact: Pick<Contact, 'language'> | undefined) => string {
  const bodies = new Map<Language, string>();
  const reference = incidentId === undefined ? undefined : incidentReference(incidentId);
  return (contact) => {
    const language = languageOf(contact, settings);
    let body = bodies.get(language);
    if (body === undefined) {
      body = render({ language, timeZone: settings.timeZone, reference });
      bodies.set(language, body);
    }
    return body;
  };
}
