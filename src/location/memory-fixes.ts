/** Latest fixes in this process's memory (embedded mode: one process, nothing to share). */
import type { StoredFix } from '../domain/location.js';
import type { LatestFixes } from './port.js';

export class MemoryFixes implements LatestFixes {
  private readonly fixes = new Map<string, { fix: StoredFix; until: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  async get(timerId: string): Promise<StoredFix | null> {
    const e = this.fixes.get(timerId);
    if (!e) return null;
    if (e.until <= this.clock()) {
      this.fixes.delete(timerId);
      return null;
    }
    return e.fix;
  }

  async getMany(timerIds: string[]): Promise<Map<string, StoredFix>> {
    const out = new Map<string, StoredFix>();
    for (const id of timerIds) {
      const fix = await this.get(id);
      if (fix) out.set(id, fix);
    }
    return out;
  }

  async set(fix: StoredFix): Promise<void> {
    const now = this.clock();
    // drop what has expired, so ended timers do not pile up
    for (const [id, e] of this.fixes) if (e.until <= now) this.fixes.delete(id);
    this.fixes.set(fix.timerId, { fix, until: now + this.ttlMs });
  }

  async close(): Promise<void> {
    this.fixes.clear();
  }
}
