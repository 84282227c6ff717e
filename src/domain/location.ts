/**
 * Live location rules. Pure: distances, which fixes are kept, how old a fix reads in a text,
 * the per-person rate rule and when a move is worth a follow-up text.
 */
import type { GeoPoint } from './timer.js';

/** One location fix of a person during a timer (or its open incident). */
export interface Fix {
  lat: number;
  lng: number;
  /** horizontal accuracy reported by the phone, metres */
  accuracyM?: number;
  /** when the phone took the fix */
  at: Date;
}

/** A fix the store keeps (the trail): the fix and the timer and person it belongs to. */
export interface StoredFix extends Fix {
  timerId: string;
  userId: string;
}

/** Fixes closer than this to the last kept fix are dropped. */
export const MIN_MOVE_METERS = 10;

const EARTH_RADIUS_M = 6_371_008.8;
const rad = (deg: number) => (deg * Math.PI) / 180;

/** Great-circle distance in metres (haversine). */
export function haversineMeters(a: GeoPoint, b: GeoPoint): number {
  const dLat = rad(b.lat - a.lat);
  const dLng = rad(b.lng - a.lng);
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(rad(a.lat)) * Math.cos(rad(b.lat)) * Math.sin(dLng / 2) ** 2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** Whether a new fix is kept: the first one always, then only when it moved at least `minMeters` from the last kept one. */
export function keepFix(lastKept: GeoPoint | null | undefined, next: GeoPoint, minMeters = MIN_MOVE_METERS): boolean {
  if (!lastKept) return true;
  return haversineMeters(lastKept, next) >= minMeters;
}

/** Of two fixes, the one taken later (the first when equal). */
export function fresher<F extends Fix>(a: F | null | undefined, b: F | null | undefined): F | null {
  if (!a) return b ?? null;
  if (!b) return a;
  return b.at.getTime() > a.at.getTime() ? b : a;
}

/**
 * Why a fix time is refused, or null when it is acceptable: not in the future (beyond
 * `skewMs` of the server clock), not before the timer started.
 */
export function fixTimeProblem(at: Date, now: Date, timerStartedAt: Date, skewMs = 5_000): 'in_future' | 'before_timer' | null {
  if (at.getTime() > now.getTime() + skewMs) return 'in_future';
  if (at.getTime() < timerStartedAt.getTime()) return 'before_timer';
  return null;
}

export interface FixRateRule {
  /** at most one kept fix per this many milliseconds */
  minIntervalMs: number;
  /** at most this many posts per person in any minute */
  perMinute: number;
}

/**
 * The per-person rate rule, given the times (ms) of this person's posts in the last minute
 * (oldest first) and of their last kept fix. Answers how long to wait when refused.
 */
export function rateDecision(
  rule: FixRateRule,
  now: number,
  recentPosts: readonly number[],
  lastKeptAt: number | undefined,
): { ok: true } | { ok: false; retryAfterMs: number } {
  if (lastKeptAt !== undefined && now - lastKeptAt < rule.minIntervalMs)
    return { ok: false, retryAfterMs: rule.minIntervalMs - (now - lastKeptAt) };
  const inWindow = recentPosts.filter((t) => now - t < 60_000);
  if (inWindow.length >= rule.perMinute) return { ok: false, retryAfterMs: 60_000 - (now - inWindow[0]!) };
  return { ok: true };
}

/** Whether the person has moved far enough from where the SOS said they were to text the contacts again. */
export const movedBeyond = (sosPoint: GeoPoint | undefined, fix: GeoPoint, meters: number): boolean =>
  sosPoint !== undefined && haversineMeters(sosPoint, fix) > meters;
