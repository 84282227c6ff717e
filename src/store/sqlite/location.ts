/** The location trail on SQLite (the LocationStore part of the port). */
import type Database from 'better-sqlite3';
import type { StoredFix } from '../../domain/location.js';
import type { LocationStore } from '../port-location.js';
import { prepareLocation, type LocationStatements } from './statements-location.js';

interface FixRow {
  timer_id: string;
  user_id: string;
  at: number;
  lat: number;
  lng: number;
  accuracy_m: number | null;
  stored_at: number;
}

const toFix = (r: FixRow): StoredFix => ({
  timerId: r.timer_id,
  userId: r.user_id,
  at: new Date(r.at),
  lat: r.lat,
  lng: r.lng,
  ...(r.accuracy_m === null ? {} : { accuracyM: r.accuracy_m }),
});

export class SqliteLocation implements LocationStore {
  private readonly st: LocationStatements;

  constructor(
    private readonly db: Database.Database,
    private readonly clock: () => number,
  ) {
    this.st = prepareLocation(db);
  }

  async addFixes(fixes: StoredFix[]): Promise<number> {
    if (fixes.length === 0) return 0;
    const now = this.clock();
    return this.db
      .transaction(() => {
        let added = 0;
        for (const f of fixes)
          added += this.st.fixInsert.run({
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
  }

  async listFixes(timerId: string, limit: number): Promise<StoredFix[]> {
    return (this.st.fixesOfTimer.all({ timerId, limit }) as FixRow[]).map(toFix);
  }

  async lastFix(timerId: string): Promise<StoredFix | null> {
    const row = this.st.lastFixOfTimer.get(timerId) as FixRow | undefined;
    return row ? toFix(row) : null;
  }
}
