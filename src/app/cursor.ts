import { PAGE_SIZE } from '../domain/paging.js';

/**
 * Where the next `since` read should start. A full page of changes resumes from the last
 * record returned (it may come again, never skipped); otherwise from the store time read
 * before the query. Records sharing one millisecond beyond a full page need a larger `limit`.
 */
export function nextCursor(rows: { updatedAt: Date }[], filter: { since?: Date; limit?: number }, now: Date): { cursor: Date; more: boolean } {
  const last = rows.at(-1);
  const more = rows.length >= (filter.limit ?? PAGE_SIZE);
  if (filter.since && last && more) return { cursor: new Date(last.updatedAt.getTime() - 1), more };
  return { cursor: now, more };
}
