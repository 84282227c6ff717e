/**
 * Group commit: calls made in the same turn of the event loop are written together, with one
 * store write for the lot (one SQLite transaction, one commit) instead of one commit each.
 * Each caller still gets its own answer, or the write's error. Used for delivery outcomes
 * (worker/dispatcher.ts) and the inbox entries a burst of sent SOS texts records.
 * With a window (`windowMs` > 0) the first call waits that long for others to join it: for
 * writes nobody waits on (the inbox entry after a text went out), not for anything that
 * holds a send slot or an answer.
 */
interface Waiting<I, O> {
  item: I;
  resolve: (o: O) => void;
  reject: (err: unknown) => void;
}

export class GroupCommit<I, O> {
  private queue: Waiting<I, O>[] = [];
  private scheduled = false;

  constructor(
    /** writes the items, answers one result per item, in order */
    private readonly write: (items: I[]) => Promise<O[]>,
    /** most items in one write (one short transaction: the event loop waits while it runs on SQLite) */
    private readonly maxBatch = 200,
    /** how long the first item waits for others (ms); 0: until the end of this turn */
    private readonly windowMs = 0,
  ) {}

  add(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(now = false): void {
    if (this.scheduled || this.queue.length === 0) return;
    this.scheduled = true;
    const flush = () => {
      this.scheduled = false;
      void this.flush();
    };
    if (now || this.windowMs <= 0) setImmediate(flush);
    else setTimeout(flush, this.windowMs);
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, this.maxBatch);
    this.schedule(true); // what did not fit goes in the next write
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
