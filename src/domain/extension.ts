/**
 * The extension rule on its own, for stores that cannot express it in one conditional
 * write: they read the timer, ask this, then compare-and-swap on the values they read.
 * Pure: `now` is the store's clock, passed in.
 */
import { isLive, type Timer } from './timer.js';

export interface ExtensionCaps {
  /** how many times one timer may be extended */
  maxExtensions: number;
  /** the whole span from start to deadline, extensions included */
  maxTotalSeconds: number;
}

/**
 * The timer's next deadline and extension count after adding `seconds`, or null when a
 * rule refuses: not live, deadline reached (the sweep owns it then), too many
 * extensions, or a span beyond `maxTotalSeconds` (equal is allowed).
 */
export function extendedDeadline(
  t: Pick<Timer, 'status' | 'startedAt' | 'expiresAt' | 'extensions'>,
  seconds: number,
  caps: ExtensionCaps,
  now: Date,
): { expiresAt: Date; extensions: number } | null {
  if (!isLive(t.status)) return null;
  if (t.expiresAt.getTime() <= now.getTime()) return null;
  if (t.extensions >= caps.maxExtensions) return null;
  const expiresAt = new Date(t.expiresAt.getTime() + seconds * 1000);
  if (expiresAt.getTime() - t.startedAt.getTime() > caps.maxTotalSeconds * 1000) return null;
  return { expiresAt, extensions: t.extensions + 1 };
}
