/**
 * The nudge before the SOS. Pure. A live timer is warned once per deadline: when it enters
 * the window `[expiresAt - before, expiresAt + grace)` and has not been warned since it was
 * armed or last extended (an extension clears the stamp, so the new deadline warns again).
 * A timer shorter than the warning lead is not warned: the nudge would arrive as it is armed.
 * The store's claim (`claimWarnings`) is the same rule written as a query; the contract tests
 * hold the two together.
 */
import { isLive, type Timer } from './timer.js';

export interface WarningWindow {
  /** how long before the deadline the person is nudged (ms); 0 turns warnings off */
  beforeMs: number;
  /** how long after the deadline the sweep still waits before the SOS (ms) */
  graceMs: number;
}

export function inWarningWindow(t: Pick<Timer, 'status' | 'startedAt' | 'expiresAt' | 'warnedAt'>, now: Date, w: WarningWindow): boolean {
  if (w.beforeMs <= 0 || !isLive(t.status) || t.warnedAt !== undefined) return false;
  const deadline = t.expiresAt.getTime();
  if (deadline - t.startedAt.getTime() <= w.beforeMs) return false;
  const at = now.getTime();
  return at >= deadline - w.beforeMs && at < deadline + w.graceMs;
}

/** A timer is due for the SOS once its deadline and the grace after it have passed. */
export const isDue = (t: Pick<Timer, 'status' | 'expiresAt'>, now: Date, graceMs: number): boolean =>
  isLive(t.status) && t.expiresAt.getTime() + graceMs <= now.getTime();

/** The n-th warning of a timer: one per deadline, and each extension makes a new deadline. */
export const warningKey = (t: Pick<Timer, 'id' | 'extensions'>): string => `warning:${t.id}:${t.extensions}`;
