/**
 * Request schemas (zod, strict: unknown fields are refused) and one parse helper.
 * The OpenAPI document is generated from these, so a bound changed here changes the document.
 */
import { z } from 'zod';
import { E164, MAX_CONTACTS } from '../domain/contact.js';
import { Invalid } from '../domain/errors.js';
import { INCIDENT_STATUSES } from '../domain/incident.js';
import { PAGE_SIZE } from '../domain/paging.js';
import { TIMER_STATUSES } from '../domain/timer.js';
import { GeoPoint } from './schemas.js';

export function parse<T extends z.ZodType>(schema: T, value: unknown, where: string): z.infer<T> {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  throw Invalid('validation_failed', `the ${where} is not valid`, {
    issues: r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
  });
}

const text = (max: number) => z.string().trim().min(1).max(max);

// durations are bounded by the configured TimerLimits in the domain (400 `out_of_range`), not here
export const ArmBody = z.strictObject({
  durationSeconds: z.number().int(),
  locationName: text(120).optional(),
  location: GeoPoint.optional(),
});

export const ExtendBody = z.strictObject({ seconds: z.number().int() });
export const EmptyBody = z.strictObject({});

export const ContactsBody = z.strictObject({
  contacts: z
    .array(z.strictObject({ name: text(80), phone: z.string().regex(E164, 'must be an E.164 number like +14155550123').meta({ examples: ['+14155550123'] }) }))
    .max(MAX_CONTACTS, `at most ${MAX_CONTACTS} contacts`)
    .refine((cs) => new Set(cs.map((c) => c.phone)).size === cs.length, 'the same number is listed twice')
    .meta({ description: 'No number may appear twice.' }),
});

const since = z.iso
  .datetime({ offset: true })
  .transform((s) => new Date(s))
  .optional()
  .meta({ description: 'only what changed after this time (ISO 8601 with offset)' });
const limit = z.coerce.number().int().min(1).max(PAGE_SIZE).optional();

export const TimerQuery = z.strictObject({ status: z.enum(TIMER_STATUSES).optional(), since, limit });
export const IncidentQuery = z.strictObject({ status: z.enum(INCIDENT_STATUSES).optional(), since, limit });

export const IdempotencyKey = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
  .meta({ description: 'Makes arming safe to retry: the same key with the same body returns the same timer.' });
export const IdParam = z.string().min(1).max(200);
