/**
 * Group commit: calls made in the same turn of the event loop (or, with `windowMs`, within
 * that many ms of the first waiting call) are written together, with one store write for the
 * lot (one SQLite transaction, one commit) instead of one commit each. Each caller still gets
 * its own answer, or the write's error. Used for delivery outcomes (worker/dispatcher.ts,
 * `outcomeWindowMs`) and the inbox entries a burst of sent SOS texts records (main.ts sets
 * 10 ms for both).
 */
interface Waiting<I, O> {
  item: I;
  resolve: (o: O) => void;
  reject: (err: unknown) => void;
}

export class GroupCommit<I, O> {
  private queue: Waiting<I, O>[] = [];
  private scheduled = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    /** writes the items, answers one result per item, in order */
    private readonly write: (items: I[]) => Promise<O[]>,
    /** most items in one write (one short transaction: the event loop waits while it runs on SQLite) */
    private readonly maxBatch = 200,
    /** how long the first waiting call waits for others (0: only the calls of the same turn) */
    private readonly windowMs = 0,
  ) {}

  add(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(overflow = false): void {
    if (this.queue.length === 0) return;
    const full = overflow || this.queue.length >= this.maxBatch;
    // a full batch waits for nothing more: the window's timer gives way to the next turn
    if (this.timer && full) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.scheduled = false;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    if (this.windowMs > 0 && !full)
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.scheduled = false;
        void this.flush();
      }, this.windowMs);
    else
      setImmediate(() => {
        this.scheduled = false;
        void this.flush();
      });
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, this.maxBatch);
    this.schedule(true); // what did not fit goes in the next write, at once
    try {
      const out = await this.write(batch.map((w) => w.item));
      batch.forEach((w, i) => {
        if (i < out.length) w.resolve(out[i] as O);
        else w.reject(new Error(`group commit: the write answered ${out.length} results for ${batch.length} items`));
      });
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}
