/**
 * SMS caps against abuse, applied when deliveries are created. Pure: the counts come from the
 * caller. What is never held back: a person in danger must reach every contact, and a contact
 * who was alarmed must hear that it is over.
 *
 *   never held   the SOS (one per contact and incident), and the text that ends it (the
 *                all-clear after "I'm safe", the closing text after a moderator's resolve).
 *   per incident a follow-up (`moved`) only while the incident's texts are under
 *                maxPerIncident.
 *   per person   a follow-up only while the person's texts handed to a carrier in the last
 *                24 h are under maxPerUserPerDay (texts never sent, superseded or cancelled,
 *                do not count).
 *
 * A follow-up over a cap is recorded as held (status `superseded`, `lastError` `held_<reason>`:
 * on the incident, in the console) and counted in `vigil_sms_capped_total{reason}`.
 */
export type CapReason = 'per_incident' | 'per_day';

/** The rolling window of the per-person cap. */
export const CAP_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface SmsCaps {
  maxPerIncident: number;
  maxPerUserPerDay: number;
}

/** How many of `wanted` new texts may be created, and why the rest may not. */
export interface Allowance {
  allowed: number;
  capped: number;
  reason?: CapReason;
}

/** `lastError` of a follow-up held back by a cap. */
export const heldError = (reason: CapReason): string => `held_${reason}`;

export function makeSmsCaps(input: SmsCaps): SmsCaps {
  if (!Number.isInteger(input.maxPerIncident) || input.maxPerIncident < 1) throw new Error('maxPerIncident must be an integer >= 1');
  if (!Number.isInteger(input.maxPerUserPerDay) || input.maxPerUserPerDay < 1) throw new Error('maxPerUserPerDay must be an integer >= 1');
  return { maxPerIncident: input.maxPerIncident, maxPerUserPerDay: input.maxPerUserPerDay };
}

/**
 * The follow-up allowance: what is left of the incident's cap (`incidentTexts`: its texts that
 * went or will go out) and of the person's day (`dayTexts`: their texts handed to a carrier).
 */
export function followUpAllowance(caps: SmsCaps, n: { wanted: number; incidentTexts: number; dayTexts: number }): Allowance {
  const incidentRoom = Math.max(0, caps.maxPerIncident - n.incidentTexts);
  const dayRoom = Math.max(0, caps.maxPerUserPerDay - n.dayTexts);
  const room = Math.min(incidentRoom, dayRoom);
  if (n.wanted <= room) return { allowed: n.wanted, capped: 0 };
  return { allowed: room, capped: n.wanted - room, reason: incidentRoom <= dayRoom ? 'per_incident' : 'per_day' };
}
