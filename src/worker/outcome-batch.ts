/**
 * Group commit of delivery outcomes: the sends that finish in the same turn of the event
 * loop are recorded with one `recordAttempts` write (one SQLite transaction, one MongoDB
 * bulkWrite) instead of one commit each, which capped SMS per second. Each caller still
 * gets its own answer (the delivery, or null when its lease was lost).
 */
import { GroupCommit } from '../app/group-commit.js';
import type { Delivery } from '../domain/delivery.js';
import type { AttemptRecord } from '../store/port-batch.js';
import type { Store } from '../store/port.js';

export class OutcomeBatcher {
  private readonly group: GroupCommit<AttemptRecord, Delivery | null>;

  constructor(store: Pick<Store, 'recordAttempts'>, maxBatch = 200) {
    this.group = new GroupCommit((list) => store.recordAttempts(list), maxBatch);
  }

  record(record: AttemptRecord): Promise<Delivery | null> {
    return this.group.add(record);
  }
}
