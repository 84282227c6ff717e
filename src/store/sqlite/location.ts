/** The location trail on SQLite (the LocationStore part of the port; SQL in ./location-statements.ts). */
import type { StoredFix } from '../../domain/location.js';
import { read, write } from './ctx.js';

export interface FixRow {
  timer_id: string;
  user_id: string;
  at: number;
  lat: number;
  lng: number;
  accuracy_m: number | null;
  stored_at: number;
}

export const toFix = (r: FixRow): StoredFix => ({
  timerId: r.timer_id,
  userId: r.user_id,
  at: new Date(r.at),
  lat: r.lat,
  lng: r.lng,
  ...(r.accuracy_m === null ? {} : { accuracyM: r.accuracy_m }),
});

export const addFixes = write((c, fixes: StoredFix[]): number => {
  if (fixes.length === 0) return 0;
  const now = c.clock();
  return c.db
    .transaction(() => {
      let added = 0;
      for (const f of fixes)
        added += c.st.fixInsert.run({
          timerId: f.timerId,
          userId: f.userId,
          at: f.at.getTime(),
          lat: f.lat,
          lng: f.lng,
          accuracyM: f.accuracyM ?? null,
          now,
        }).changes;
      return added;
    })
    .immediate();
});

export const listFixes = read((c, timerId: string, limit: number): StoredFix[] =>
  (c.st.fixesOfTimer.all({ timerId, limit }) as FixRow[]).map(toFix),
);

export const lastFix = read((c, timerId: string): StoredFix | null => {
  const row = c.st.lastFixOfTimer.get(timerId) as FixRow | undefined;
  return row ? toFix(row) : null;
});
