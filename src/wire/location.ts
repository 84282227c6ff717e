/** The wire shape of location fixes and whom a person is meeting (REST answers and events alike). */
import { z } from 'zod';
import { E164 } from '../domain/contact.js';
import type { Fix } from '../domain/location.js';
import { plainName } from '../domain/messages.js';
import type { Meeting } from '../domain/timer.js';

export function fixView(f: Fix) {
  return { lat: f.lat, lng: f.lng, accuracyM: f.accuracyM, at: f.at.toISOString() };
}

/** The answer to a posted fix: kept or dropped (and why), the fix as understood, the open incident if any. */
export function postView(r: { kept: boolean; reason?: string; fix: Fix; incidentId?: string }) {
  return {
    kept: r.kept,
    ...(r.reason ? { reason: r.reason } : {}),
    fix: fixView(r.fix),
    ...(r.incidentId ? { incidentId: r.incidentId } : {}),
  };
}

/** `phone`: how the number is shown (events mask it: ./views.ts `PhoneShown`). */
export function meetingView(m: Meeting | undefined, phone: (p: string) => string = (p) => p) {
  return m ? { withUserId: m.withUserId, name: m.name, phone: m.phone === undefined ? undefined : phone(m.phone) } : undefined;
}

/** A posted fix (REST body and the `location.fix` socket message): strict, bounded. */
export const FixBody = z.strictObject({
  lat: z.number().min(-90).max(90),
  lng: z.number().min(-180).max(180),
  accuracyM: z.number().min(0).max(100_000).optional().meta({ description: 'horizontal accuracy reported by the phone, metres' }),
  at: z.iso
    .datetime({ offset: true })
    .optional()
    .meta({ description: 'when the phone took the fix; not in the future, not before the timer started; default: now' }),
});
export type FixBodyInput = z.infer<typeof FixBody>;

const plain = (max: number) =>
  z
    .string()
    .max(max)
    .transform((s) => plainName(s))
    .pipe(z.string().min(1, 'must contain visible characters'));

/** Whom the person is meeting (on arming): each field optional, at least one given; names plain, phone E.164. */
export const MeetingBody = z
  .strictObject({
    withUserId: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
      .optional(),
    name: plain(80).optional(),
    phone: z
      .string()
      .regex(E164, 'must be an E.164 number like +14155550123')
      .meta({ examples: ['+14155550123'] })
      .optional(),
  })
  .refine(
    (m) => m.withUserId !== undefined || m.name !== undefined || m.phone !== undefined,
    'give at least one of withUserId, name, phone',
  )
  .meta({
    description: 'Whom the person is meeting. Shown to moderators on the incident; sent to contacts only if the deployment says so.',
  });
