import { PAGE_SIZE } from '../domain/paging.js';

/**
 * A place in the order of changes, `(updatedAt, id)`: what comes after it was updated later,
 * or in the same millisecond with a larger id. Without `sinceId`, after every record of that
 * millisecond (the meaning of a plain `since=<ISO time>`).
 */
export interface ChangePosition {
  since: Date;
  sinceId?: string;
}

const PREFIX = 'c1.';

/** The cursor handed to clients: opaque, printable, URL-safe. */
export function encodeCursor(p: ChangePosition): string {
  const parts = p.sinceId === undefined ? [p.since.getTime()] : [p.since.getTime(), p.sinceId];
  return PREFIX + Buffer.from(JSON.stringify(parts)).toString('base64url');
}

/** A cursor from encodeCursor, or `undefined` when it is not one. */
export function decodeCursor(s: string): ChangePosition | undefined {
  if (!s.startsWith(PREFIX)) return undefined;
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(s.slice(PREFIX.length), 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parts) || parts.length < 1 || parts.length > 2) return undefined;
  const [ms, id] = parts as unknown[];
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || Number.isNaN(new Date(ms).getTime())) return undefined;
  if (parts.length === 1) return { since: new Date(ms) };
  return typeof id === 'string' && id.length > 0 ? { since: new Date(ms), sinceId: id } : undefined;
}

/**
 * Where the next `since` read should start, so that following cursors sees every change at
 * least once (repeats allowed, gaps not). `readAt` is the store's time read before the query;
 * a change stamped more than `lagMs` before it has committed (the store stamps inside the
 * write; `lagMs` bounds the rest), later ones may still be landing.
 * - a full page resumes after its last record that is older than that horizon (keyset, so
 *   records sharing a millisecond across the page boundary are not skipped); a full page of
 *   records all younger than it is read again once they have settled;
 * - otherwise everything up to the horizon was returned: resume from the horizon, so records
 *   still landing behind it come (possibly again) next time.
 */
export function nextCursor(
  rows: { id: string; updatedAt: Date }[],
  filter: { since?: ChangePosition; limit?: number },
  readAt: Date,
  lagMs: number,
): { cursor: ChangePosition; more: boolean } {
  const horizon = readAt.getTime() - lagMs;
  const more = rows.length >= (filter.limit ?? PAGE_SIZE);
  const from = filter.since;
  if (from && more) {
    const settled = [...rows].reverse().find((r) => r.updatedAt.getTime() <= horizon);
    return { cursor: settled ? { since: settled.updatedAt, sinceId: settled.id } : from, more };
  }
  // never move a caller's cursor backwards past where they asked to start
  if (from && from.since.getTime() > horizon) return { cursor: from, more };
  return { cursor: { since: new Date(horizon) }, more };
}
