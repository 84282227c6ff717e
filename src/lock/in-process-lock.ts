/** Lock adapter for one process (embedded mode): a map of leases with expiry. */
import { randomUUID } from 'node:crypto';
import type { Lease, Lock } from './port.js';

interface Held {
  token: string;
  until: number;
}

export class InProcessLock implements Lock {
  private readonly held = new Map<string, Held>();
  private fence = 0;

  constructor(private readonly nowMs: () => number = Date.now) {}

  async acquire(name: string, ttlMs: number): Promise<Lease | null> {
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
