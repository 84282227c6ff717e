/**
 * The retention job: once a day (RETENTION_CRON), under its own lock, anonymise what closed
 * more than RETENTION_DAYS ago (see docs/privacy.md). Bounded work per run: at most
 * `maxBatches` batches of `batchSize` records per kind; what is left waits for the next run.
 * Every write is a CAS that repeats its conditions, so a second runner (a lapsed lease, the
 * lock service down) does no harm. Logs counts only, never what was removed.
 */
import type { Logger } from 'pino';
import { RETENTION_KINDS, type RetentionCounts } from '../domain/moderation.js';
import type { Lease, Lock } from '../lock/port.js';
import type { Metrics } from '../metrics.js';
import type { Store } from '../store/port.js';

export interface RetentionSettings {
  /** anonymise what closed more than this many days ago; 0 = keep everything (the job does nothing) */
  days: number;
  /** records per kind per batch */
  batchSize: number;
  /** batches per run; the rest waits for the next run */
  maxBatches: number;
  lockName: string;
  lockTtlMs: number;
}

export interface RetentionReport {
  outcome: 'off' | 'contended' | 'done' | 'more_left' | 'lost_lease';
  cutoff?: Date;
  batches: number;
  counts: RetentionCounts;
}

const DAY_MS = 86_400_000;
const zero = (): RetentionCounts => ({ timers: 0, incidents: 0, deliveries: 0, notes: 0, fixes: 0, notifications: 0 });

export class RetentionJob {
  constructor(
    private readonly store: Store,
    private readonly lock: Lock,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly settings: RetentionSettings,
  ) {}

  /** One run. Throws only on store trouble (the scheduler counts it and carries on). */
  async run(): Promise<RetentionReport> {
    const report: RetentionReport = { outcome: 'done', batches: 0, counts: zero() };
    if (this.settings.days <= 0) return this.finish({ ...report, outcome: 'off' });
    let lease: Lease | null = null;
    try {
      lease = await this.lock.acquire(this.settings.lockName, this.settings.lockTtlMs);
      if (!lease) return this.finish({ ...report, outcome: 'contended' });
    } catch (err) {
      // the writes are CAS and idempotent: running without the lock only risks doing the same work twice
      this.log.warn({ err }, 'retention: lock service unreachable; running without the lock');
    }
    try {
      const now = await this.store.now();
      report.cutoff = new Date(now.getTime() - this.settings.days * DAY_MS);
      for (;;) {
        const c = await this.store.redactClosed(report.cutoff, this.settings.batchSize);
        report.batches++;
        for (const kind of RETENTION_KINDS) {
          report.counts[kind] += c[kind];
          if (c[kind] > 0) this.metrics.retentionRecords.inc({ kind }, c[kind]);
        }
        if (RETENTION_KINDS.every((k) => c[k] < this.settings.batchSize)) break;
        if (report.batches >= this.settings.maxBatches) {
          report.outcome = 'more_left';
          break;
        }
        if (lease && !(await lease.extend(this.settings.lockTtlMs))) {
          report.outcome = 'lost_lease';
          break;
        }
      }
      return this.finish(report);
    } finally {
      await lease?.release().catch((err: unknown) => this.log.warn({ err }, 'retention: lock release failed; the lease will lapse'));
    }
  }

  private finish(report: RetentionReport): RetentionReport {
    this.metrics.retentionRuns.inc({ outcome: report.outcome });
    if (report.outcome !== 'off' && report.outcome !== 'contended')
      this.log.info(
        { outcome: report.outcome, cutoff: report.cutoff?.toISOString(), batches: report.batches, ...report.counts },
        'retention run: records anonymised',
      );
    return report;
  }
}
