/**
 * Lock adapter for one process (embedded mode): a map of leases with expiry. Its fence
 * counter lives in memory: the first acquisition after start continues above
 * `fenceFloor` (the store's highest recorded fence), so fences keep increasing across restarts.
 */
import { randomUUID } from 'node:crypto';
import type { Lease, Lock } from './port.js';

interface Held {
  token: string;
  until: number;
}

export class InProcessLock implements Lock {
  private readonly held = new Map<string, Held>();
  private fence = 0;
  private seeding: Promise<void> | undefined;

  constructor(
    private readonly nowMs: () => number = Date.now,
    private readonly fenceFloor: () => Promise<number> = async () => 0,
  ) {}

  async acquire(name: string, ttlMs: number): Promise<Lease | null> {
    this.seeding ??= this.fenceFloor().then(
      (floor) => {
        this.fence = Math.max(this.fence, Math.floor(floor));
      },
      (err: unknown) => {
        this.seeding = undefined; // ask again on the next acquisition
        throw err;
      },
    );
    await this.seeding;
    const cur = this.held.get(name);
    const now = this.nowMs();
    if (cur && cur.until > now) return null;
    const token = randomUUID();
    this.held.set(name, { token, until: now + ttlMs });
    const fence = ++this.fence;
    return {
      token,
      fence,
      extend: async (ms: number) => {
        const h = this.held.get(name);
        if (!h || h.token !== token || h.until <= this.nowMs()) return false;
        h.until = this.nowMs() + ms;
        return true;
      },
      release: async () => {
        const h = this.held.get(name);
        if (h && h.token === token) this.held.delete(name);
      },
    };
  }

  async close(): Promise<void> {
    this.held.clear();
  }
}
