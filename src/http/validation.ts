/**
 * Request schemas (zod, strict: unknown fields are refused) and one parse helper.
 * The OpenAPI document is generated from these, so a bound changed here changes the document.
 */
import { z } from 'zod';
import { E164, MAX_CONTACTS } from '../domain/contact.js';
import { decodeCursor, type ChangePosition } from '../app/cursor.js';
import { Invalid } from '../domain/errors.js';
import { INCIDENT_STATUSES } from '../domain/incident.js';
import { LANGUAGES } from '../domain/locale.js';
import { hasRefusedNameChars } from '../domain/messages.js';
import { REASON_MAX_CHARS } from '../domain/moderation.js';
import { PAGE_SIZE } from '../domain/paging.js';
import { TIMER_STATUSES } from '../domain/timer.js';
import { MeetingBody } from '../wire/location.js';
import { GeoPoint } from './schemas.js';

export { FixBody } from '../wire/location.js';

export function parse<T extends z.ZodType>(schema: T, value: unknown, where: string): z.infer<T> {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  throw Invalid('validation_failed', `the ${where} is not valid`, {
    issues: r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
  });
}

/** A name that goes into texts: no control, bidi or invisible characters (domain/messages.ts). */
const text = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .refine((s) => !hasRefusedNameChars(s), 'must not contain control characters, bidi controls, invisible characters or line breaks');

// durations are bounded by the configured TimerLimits in the domain (400 `out_of_range`), not here
export const ArmBody = z.strictObject({
  durationSeconds: z.number().int(),
  locationName: text(120).optional(),
  location: GeoPoint.optional(),
  meeting: MeetingBody.optional(),
  timeZone: z
    .string()
    .max(64)
    .meta({
      description: 'IANA time zone name the SOS text says the deadline in (default: the contact list’s `timeZone`, else UTC)',
      examples: ['America/Bogota'],
    })
    .optional(),
});

export const ExtendBody = z.strictObject({ seconds: z.number().int() });
export const EmptyBody = z.strictObject({});

// checked by the route, so that a bad value is its own code (`unsupported_language`), not a schema issue
const languageField = z
  .string()
  .max(16)
  .meta({ description: `one of ${LANGUAGES.map((l) => `\`${l}\``).join(', ')}; another is \`unsupported_language\``, examples: ['es'] });
/** A duress PIN: 4 to 12 digits. */
export const DuressPin = z
  .string()
  .regex(/^[0-9]{4,12}$/, 'must be 4 to 12 digits')
  .meta({ examples: ['4711'] });
export const DuressBody = z.strictObject({ pin: DuressPin });
/** "I'm safe" and cancel: empty, or a PIN (the duress PIN opens a silent SOS; any other PIN is ignored). */
export const CheckInBody = z.strictObject({ pin: DuressPin.optional() });

export const ContactsBody = z.strictObject({
  contacts: z
    .array(
      z.strictObject({
        name: text(80),
        phone: z
          .string()
          .regex(E164, 'must be an E.164 number like +14155550123')
          .meta({ examples: ['+14155550123'] }),
        language: languageField.optional(),
      }),
    )
    .max(MAX_CONTACTS, `at most ${MAX_CONTACTS} contacts`)
    .refine((cs) => new Set(cs.map((c) => c.phone)).size === cs.length, 'the same number is listed twice')
    .meta({ description: 'No number may appear twice.' }),
  language: languageField
    .meta({ description: 'the language of the texts of a contact who has none of their own (default `en`)' })
    .optional(),
  timeZone: z
    .string()
    .max(64)
    .meta({
      description: 'IANA time zone name the times in texts are said in (default UTC); an unknown one is `unknown_time_zone`',
      examples: ['Europe/Madrid'],
    })
    .optional(),
});

const isoTime = z.iso.datetime({ offset: true });
/** An ISO time (what older clients send) or a cursor from a list answer. */
const since = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'an ISO 8601 time with offset, or a cursor')
  .meta({ examples: ['2026-01-01T00:00:00.000Z'] })
  .transform((s, ctx): ChangePosition => {
    if (isoTime.safeParse(s).success) return { since: new Date(s) };
    const p = decodeCursor(s);
    if (p) return p;
    ctx.addIssue({ code: 'custom', message: 'must be a `cursor` from a list answer or an ISO 8601 time with offset' });
    return z.NEVER;
  })
  .optional()
  .meta({
    description: 'only what changed after this point: the `cursor` of an earlier answer (opaque), or an ISO 8601 time with offset',
  });
const limit = z.coerce.number().int().min(1).max(PAGE_SIZE).optional();

export const TimerQuery = z.strictObject({ status: z.enum(TIMER_STATUSES).optional(), since, limit });
/** A moderator's look at a person's timers: why, required while the person has no open incident (recorded in the audit). */
export const AdminTimerQuery = TimerQuery.extend({
  reason: z
    .string()
    .min(1)
    .max(REASON_MAX_CHARS)
    .meta({
      description:
        'Why the moderator looks (plain text), recorded in the audit. Required while the person has no open incident (400 `reason_required`).',
      examples: ['She called support: her phone died at the café'],
    })
    .optional(),
});
export const IncidentQuery = z.strictObject({ status: z.enum(INCIDENT_STATUSES).optional(), since, limit });

export const IdempotencyKey = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
  .meta({ description: 'Makes arming safe to retry: the same key with the same body returns the same timer.' });
/** The same header on extend, safe and cancel: one key, one command on one timer. */
export const CommandIdempotencyKey = IdempotencyKey.meta({
  description:
    'Makes the command safe to retry: the same key with the same request (command, timer and body) applies once; a repeat answers ' +
    'the timer as it is now with `Idempotent-Replayed: true`. A key already used for another request answers 422.',
});
export const IdParam = z.string().min(1).max(200);

/** At most this many incidents per batched trail read (GET /v1/admin/incidents/locations). */
export const MAX_TRAIL_IDS = 100;
/** `?ids=a,b,c`: comma-separated ids, each an IdParam, at most MAX_TRAIL_IDS of them. */
export const TrailsQuery = z.strictObject({
  ids: z
    .string()
    .min(1)
    .max(8000)
    .regex(/^[\x21-\x2b\x2d-\x7e]+(,[\x21-\x2b\x2d-\x7e]+)*$/, 'comma-separated ids, printable ASCII without spaces')
    .meta({
      examples: ['inc_0197a1b2-0000-7000-8000-000000000001,inc_0197a1b2-0000-7000-8000-000000000002'],
      description: `comma-separated incident ids, at most ${MAX_TRAIL_IDS} (each at most 200 characters); a repeated id is answered once`,
    })
    .transform((s) => s.split(','))
    .pipe(z.array(IdParam).max(MAX_TRAIL_IDS, `at most ${MAX_TRAIL_IDS} ids`)),
});

// ── safety: panic SOS, inbox ────────────────────────────────────────────────
export const SosBody = z.strictObject({
  location: GeoPoint.optional(),
  locationName: text(120).optional(),
  note: text(280).optional().meta({ description: 'a short line from the person, added (shortened) to the SOS text' }),
});
export const SosIdempotencyKey = IdempotencyKey.meta({
  description:
    'Makes the SOS safe to retry: the same key with the same body answers the same incident (`Idempotent-Replayed: true`); ' +
    'with another body it answers 422.',
});
const cursorParam = z
  .string()
  .min(1)
  .max(200)
  // base64url of `[createdAtMs, id]`: always starts `Wz` (`[`)
  .regex(/^Wz[\w-]+$/, 'a cursor from an earlier answer')
  .meta({ examples: ['WzE3NjcyMjU2MDAwMDAsIm50Zl9leGFtcGxlIl0'] })
  .optional()
  .meta({ description: 'the `cursor` of the previous page (opaque): the next, older page' });
export const NotificationQuery = z.strictObject({
  unread: z.enum(['true', 'false']).optional().meta({ description: '`true`: only the unread ones' }),
  cursor: cursorParam,
  limit,
});
