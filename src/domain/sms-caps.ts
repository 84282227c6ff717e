/**
 * SMS caps against abuse, applied when deliveries are created (a delivery that exists is
 * always sent). Pure: the counts come from the caller.
 *
 *   per incident  SOS + all-clear together ≤ maxPerIncident; the SOS takes what it needs
 *                 first, the all-clear gets what is left.
 *   per person    a new SOS is created only while the person's SMS of the last 24 h are
 *                 under maxPerUserPerDay, and only up to it, except the first SOS of the
 *                 window, which always goes out in full (within the per-incident cap).
 *                 The all-clear is not held by the day cap: withholding it leaves a
 *                 contact believing someone is in danger.
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

export function makeSmsCaps(input: SmsCaps): SmsCaps {
  if (!Number.isInteger(input.maxPerIncident) || input.maxPerIncident < 1) throw new Error('maxPerIncident must be an integer >= 1');
  if (!Number.isInteger(input.maxPerUserPerDay) || input.maxPerUserPerDay < 1) throw new Error('maxPerUserPerDay must be an integer >= 1');
  return { maxPerIncident: input.maxPerIncident, maxPerUserPerDay: input.maxPerUserPerDay };
}

/**
 * The SOS allowance. `usedElsewhere` counts the person's SMS in the window that are not
 * this incident's; `existing` counts this incident's deliveries already created (a
 * repaired escalation), which keep their place.
 */
export function sosAllowance(caps: SmsCaps, n: { wanted: number; existing: number; usedElsewhere: number }): Allowance {
  const incidentRoom = caps.maxPerIncident;
  // the first SOS of the window is never held back by the day cap
  const dayRoom = n.usedElsewhere === 0 ? Number.POSITIVE_INFINITY : Math.max(0, caps.maxPerUserPerDay - n.usedElsewhere);
  const allowed = Math.max(n.existing, Math.min(n.wanted, incidentRoom, dayRoom));
  const capped = Math.max(0, n.wanted - allowed);
  if (capped === 0) return { allowed, capped };
  return { allowed, capped, reason: incidentRoom <= dayRoom ? 'per_incident' : 'per_day' };
}

/** The all-clear allowance: what the SOS left of the per-incident cap. */
export function allClearAllowance(maxPerIncident: number, n: { wanted: number; sos: number; existing: number }): Allowance {
  const room = Math.max(0, maxPerIncident - n.sos - n.existing);
  const allowed = Math.min(n.wanted, room);
  const capped = n.wanted - allowed;
  return capped === 0 ? { allowed, capped } : { allowed, capped, reason: 'per_incident' };
}
