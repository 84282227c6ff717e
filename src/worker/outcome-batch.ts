/**
 * Group commit of delivery outcomes: the sends that finish in the same turn of the event
 * loop are recorded with one `recordAttempts` write (one SQLite transaction, one MongoDB
 * bulkWrite) instead of one commit each, which capped SMS per second. Each caller still
 * gets its own answer (the delivery, or null when its lease was lost).
 */
import type { Delivery } from '../domain/delivery.js';
import type { AttemptRecord } from '../store/port-batch.js';
import type { Store } from '../store/port.js';

interface Waiting {
  record: AttemptRecord;
  resolve: (d: Delivery | null) => void;
  reject: (err: unknown) => void;
}

export class OutcomeBatcher {
  private queue: Waiting[] = [];
  private scheduled = false;

  constructor(
    private readonly store: Pick<Store, 'recordAttempts'>,
    /** most outcomes in one write (one short transaction) */
    private readonly maxBatch = 200,
  ) {}

  record(record: AttemptRecord): Promise<Delivery | null> {
    return new Promise((resolve, reject) => {
      this.queue.push({ record, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, this.maxBatch);
    this.schedule(); // what did not fit goes in the next write
    try {
      const out = await this.store.recordAttempts(batch.map((w) => w.record));
      batch.forEach((w, i) => w.resolve(out[i] ?? null));
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}
