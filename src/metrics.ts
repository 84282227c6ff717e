/**
 * Every Prometheus metric, in one registry per process (no module singletons).
 * Names use base units (`_seconds`, `_total`); labels never carry a user, timer,
 * phone or room id. Store-derived gauges are read from the store at scrape time,
 * so every replica reports the same value and `max()` across replicas is right.
 * They are read in one guarded step per scrape (bounded by a timeout, never throwing):
 * when the store fails, `vigil_store_up` is 0, the store gauges keep their last value,
 * and the process, lock and loop metrics are still exported — an outage is exactly when
 * the on-call needs them.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import client from 'prom-client';
import { RETENTION_KINDS } from './domain/moderation.js';

export interface StoreGauges {
  overdue(): Promise<{ count: number; oldest?: Date }>;
  countPendingEscalations(): Promise<number>;
  deliveryBacklog(): Promise<{ pending: number; oldestDue?: Date; dead: number }>;
  failedEscalations(limit: number): Promise<unknown[]>;
  stateCounts(): Promise<{ timers: { active: number; extended: number }; incidents: { active: number; acknowledged: number } }>;
  now(): Promise<Date>;
}

/** One read of every store-wide gauge. */
interface StoreSnapshot {
  overdue: number;
  overdueAgeSeconds: number;
  escalationsPending: number;
  escalationsFailed: number;
  timersLive: { active: number; extended: number };
  incidentsOpen: { active: number; acknowledged: number };
  deliveriesPending: number;
  deliveryAgeSeconds: number;
  dead: number;
}

/** How long a scrape waits for the store before reporting it down. */
const STORE_SCRAPE_TIMEOUT_MS = 2000;
/** Dead-lettered escalations are few and each needs a human: the gauge counts up to this many. */
const FAILED_COUNT_CAP = 1000;

const LAG_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 45, 60, 120];

/**
 * prom-client's default gauges that end in `_total` (promtool: "non-counter metrics should
 * not have _total suffix"); each is the sum of the same gauge without the suffix, by `type`.
 */
const DEFAULT_GAUGES_NAMED_LIKE_COUNTERS = ['nodejs_active_resources_total', 'nodejs_active_handles_total', 'nodejs_active_requests_total'];
const DEFAULT_PREFIX = 'vigil_';
const READ_ONLY = new Set(['GET', 'HEAD', 'OPTIONS']);

/** what the SQLite store's write gate counted since it opened (src/store/sqlite/write-gate.ts) */
export interface SqliteWriteCounts {
  immediate: number;
  waited: number;
  timedOut: number;
  waitedMs: number;
  /** commits of the writes that waited (several share one) */
  groupCommits: number;
}

export function createMetrics(opts: { replica: string; collectDefault?: boolean; storeTimeoutMs?: number }) {
  const registry = new client.Registry();
  registry.setDefaultLabels({ replica: opts.replica });
  if (opts.collectDefault !== false) {
    client.collectDefaultMetrics({ register: registry, prefix: DEFAULT_PREFIX });
    for (const name of DEFAULT_GAUGES_NAMED_LIKE_COUNTERS) registry.removeSingleMetric(DEFAULT_PREFIX + name);
  }
  const r = [registry];
  // our own sampler (1 ms resolution; prom-client's default one samples every 10 ms): a
  // synchronous stretch of a few ms while a burst escalates is what this is here to show
  const loopDelay = opts.collectDefault !== false ? monitorEventLoopDelay({ resolution: 1 }) : undefined;
  loopDelay?.enable();
  let gauges: StoreGauges | undefined;
  let sqliteGate: (() => SqliteWriteCounts) | undefined;
  let sqliteSeen: Partial<Record<'free' | 'waited' | 'timed_out', number>> = {};
  let sqliteWaitSeen = 0;
  let sqliteCommitsSeen = 0;
  const age = (now: Date, then?: Date) => (then ? Math.max(0, (now.getTime() - then.getTime()) / 1000) : 0);
  // Last good read: kept through an outage so graphs do not gap; `vigil_store_up` says whether it is fresh.
  let snapshot: StoreSnapshot | undefined;
  let reading: Promise<boolean> | undefined;
  const timeoutMs = opts.storeTimeoutMs ?? STORE_SCRAPE_TIMEOUT_MS;
  const readStore = async (g: StoreGauges): Promise<StoreSnapshot> => {
    const [o, pending, failed, states, b, now] = await Promise.all([
      g.overdue(),
      g.countPendingEscalations(),
      g.failedEscalations(FAILED_COUNT_CAP),
      g.stateCounts(),
      g.deliveryBacklog(),
      g.now(),
    ]);
    return {
      overdue: o.count,
      overdueAgeSeconds: age(now, o.oldest),
      escalationsPending: pending,
      escalationsFailed: failed.length,
      timersLive: states.timers,
      incidentsOpen: states.incidents,
      deliveriesPending: b.pending,
      deliveryAgeSeconds: age(now, b.oldestDue),
      dead: b.dead,
    };
  };
  /** Every store gauge's collect awaits the same read: one round of queries per scrape; true when the store answered. */
  const refresh = (): Promise<boolean> =>
    (reading ??= (async () => {
      if (!gauges) return false;
      let timer: NodeJS.Timeout | undefined;
      const work = readStore(gauges);
      work.catch(() => undefined); // may settle after the timeout
      try {
        snapshot = await Promise.race([
          work,
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`store did not answer within ${timeoutMs} ms`)), timeoutMs);
          }),
        ]);
        return true;
      } catch {
        return false;
      } finally {
        clearTimeout(timer);
      }
    })().finally(() => {
      reading = undefined;
    }));
  const fromStore = async (g: client.Gauge, pick: (s: StoreSnapshot) => number) => {
    await refresh();
    if (snapshot) g.set(pick(snapshot));
  };
  const byStatusFromStore = async (g: client.Gauge<'status'>, pick: (s: StoreSnapshot) => Record<string, number>) => {
    await refresh();
    if (snapshot) for (const [status, n] of Object.entries(pick(snapshot))) g.set({ status }, n);
  };

  const m = {
    registry,
    sweepDuration: new client.Histogram({
      name: 'vigil_sweep_duration_seconds',
      help: 'Duration of one sweep (lock held, claims and escalations)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: r,
    }),
    sweepClaimed: new client.Histogram({
      name: 'vigil_sweep_claimed_timers',
      help: 'Timers claimed (expired) per sweep',
      buckets: [0, 1, 5, 10, 50, 100, 500, 1000, 5000],
      registers: r,
    }),
    sweeps: new client.Counter({ name: 'vigil_sweeps_total', help: 'Sweeps by outcome', labelNames: ['outcome'], registers: r }),
    lastSweep: new client.Gauge({
      name: 'vigil_last_successful_sweep_timestamp_seconds',
      help: 'Unix time of the last sweep that completed without error on this replica',
      registers: r,
    }),
    escalated: new client.Counter({ name: 'vigil_timers_escalated_total', help: 'Timers escalated to an SOS incident', registers: r }),
    escalationLag: new client.Histogram({
      name: 'vigil_escalation_lag_seconds',
      help: 'Time from a timer deadline to its incident being opened',
      buckets: LAG_BUCKETS,
      registers: r,
    }),
    escalationErrors: new client.Counter({
      name: 'vigil_escalation_errors_total',
      help: 'Escalations that failed and were left pending for repair',
      registers: r,
    }),
    casConflicts: new client.Counter({
      name: 'vigil_cas_conflicts_total',
      help: 'Compare-and-swap transitions that found the record in another state',
      labelNames: ['command'],
      registers: r,
    }),
    lockAcquisitions: new client.Counter({
      name: 'vigil_lock_acquisitions_total',
      help: 'Sweep lock attempts by result (won, contended, error)',
      labelNames: ['result'],
      registers: r,
    }),
    lockHeld: new client.Histogram({
      name: 'vigil_lock_held_seconds',
      help: 'How long the sweep lock was held, from taking it to giving it back (one sweep, or every sweep it was kept for)',
      buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30],
      registers: r,
    }),
    lockExtensions: new client.Counter({
      name: 'vigil_lock_extensions_total',
      help: 'Lock lease extensions by result',
      labelNames: ['result'],
      registers: r,
    }),
    lockHolder: new client.Gauge({ name: 'vigil_lock_holder', help: '1 while this replica holds the sweep lock', registers: r }),
    lockUnavailable: new client.Gauge({
      name: 'vigil_lock_unavailable',
      help: '1 while the lock service cannot be reached and this replica sweeps without a lock',
      registers: r,
    }),
    deliveries: new client.Counter({
      name: 'vigil_deliveries_total',
      help: 'Delivery attempts by carrier and outcome (sent, retry, failed, dead)',
      labelNames: ['carrier', 'outcome'],
      registers: r,
    }),
    smsReceipts: new client.Counter({
      name: 'vigil_sms_receipts_total',
      help: 'Carrier delivery receipts by reported status and what they did (applied, ignored, bad_signature…)',
      labelNames: ['status', 'result'],
      registers: r,
    }),
    locationFixes: new client.Counter({
      name: 'vigil_location_fixes_total',
      help: 'Location fixes by outcome (kept, dropped, rate_limited) and cache or flush failures (cache_error, flush_error); never coordinates',
      labelNames: ['outcome'],
      registers: r,
    }),
    smsCapped: new client.Counter({
      name: 'vigil_sms_capped_total',
      help: 'SMS not created because an abuse cap was reached, by reason',
      labelNames: ['reason'],
      registers: r,
    }),
    moderatorActions: new client.Counter({
      name: 'vigil_moderator_actions_total',
      help: 'Moderator actions on texts that changed something (resend, cancel: per delivery, note)',
      labelNames: ['action'],
      registers: r,
    }),
    retentionRecords: new client.Counter({
      name: 'vigil_retention_records_total',
      help: 'Records anonymised by the retention job, by kind (timers, incidents, deliveries, notes)',
      labelNames: ['kind'],
      registers: r,
    }),
    retentionRuns: new client.Counter({
      name: 'vigil_retention_runs_total',
      help: 'Retention job runs by outcome (done, more_left, contended, off, failed)',
      labelNames: ['outcome'],
      registers: r,
    }),
    escalationsPending: new client.Gauge({
      name: 'vigil_escalations_pending',
      help: 'Expired timers whose escalation has not completed (store-wide)',
      registers: r,
      async collect() {
        await fromStore(this, (s) => s.escalationsPending);
      },
    }),
    escalationsFailed: new client.Gauge({
      name: 'vigil_escalations_failed',
      help: 'Expired timers whose escalation failed ESCALATION_MAX_ATTEMPTS times and is no longer retried (store-wide dead letters, counted up to 1000)',
      registers: r,
      async collect() {
        await fromStore(this, (s) => s.escalationsFailed);
      },
    }),
    escalationsDeadLettered: new client.Counter({
      name: 'vigil_escalations_dead_lettered_total',
      help: 'Escalations dead-lettered by this replica after ESCALATION_MAX_ATTEMPTS failures',
      registers: r,
    }),
    deliveriesPending: new client.Gauge({
      name: 'vigil_deliveries_pending',
      help: 'Deliveries pending or being sent (store-wide)',
      registers: r,
      async collect() {
        await fromStore(this, (s) => s.deliveriesPending);
      },
    }),
    carrierCircuit: new client.Gauge({
      name: 'vigil_carrier_circuit_state',
      help: 'Primary carrier circuit: 0 closed, 0.5 half-open, 1 open (sending through the secondary)',
      registers: r,
    }),
    fanoutDropped: new client.Counter({
      name: 'vigil_fanout_dropped_total',
      help: 'Socket.IO events not sent to the other replicas: Redis failed the batch (error) or too many were waiting for it (backlog)',
      labelNames: ['reason'],
      registers: r,
    }),
    loopErrors: new client.Counter({
      name: 'vigil_loop_errors_total',
      help: 'Errors caught in background loops',
      labelNames: ['loop'],
      registers: r,
    }),
    httpDuration: new client.Histogram({
      name: 'vigil_http_request_duration_seconds',
      help: 'HTTP request duration by route template and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: r,
    }),
    commands: new client.Counter({
      name: 'vigil_commands_total',
      help: 'Requests that change state (not GET, HEAD or OPTIONS), by route template, outcome (accepted, refused, failed) and error code',
      labelNames: ['route', 'outcome', 'reason'],
      registers: r,
    }),
    sosSmsLatency: new client.Histogram({
      name: 'vigil_sos_sms_latency_seconds',
      help: 'Time from an SOS being queued for a contact (when the incident opens) to a carrier accepting the text',
      buckets: [0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600],
      registers: r,
    }),
    /** One finished request: state-changing ones are counted by outcome and error code. */
    countCommand(method: string, route: string, status: number, code: unknown) {
      if (READ_ONLY.has(method)) return;
      const outcome = status >= 500 ? 'failed' : status >= 400 ? 'refused' : 'accepted';
      m.commands.inc({ route, outcome, reason: typeof code === 'string' && outcome !== 'accepted' ? code : 'none' });
    },
    sockets: new client.Gauge({ name: 'vigil_socketio_connections', help: 'Open Socket.IO connections on this replica', registers: r }),
    timersLive: new client.Gauge({
      name: 'vigil_timers_live',
      help: 'Live timers by status, active or extended (store-wide)',
      labelNames: ['status'],
      registers: r,
      async collect() {
        await byStatusFromStore(this, (s) => s.timersLive);
      },
    }),
    incidentsOpen: new client.Gauge({
      name: 'vigil_incidents_open',
      help: 'Open incidents by status, active or acknowledged (store-wide)',
      labelNames: ['status'],
      registers: r,
      async collect() {
        await byStatusFromStore(this, (s) => s.incidentsOpen);
      },
    }),
    overdue: new client.Gauge({
      name: 'vigil_timers_overdue',
      help: 'Live timers past their deadline and not yet escalated (store-wide)',
      registers: r,
      async collect() {
        await fromStore(this, (s) => s.overdue);
      },
    }),
    overdueAge: new client.Gauge({
      name: 'vigil_timers_overdue_oldest_age_seconds',
      help: 'Age of the oldest overdue timer: the queue age (store-wide)',
      registers: r,
      async collect() {
        await fromStore(this, (s) => s.overdueAgeSeconds);
      },
    }),
    deliveryAge: new client.Gauge({
      name: 'vigil_delivery_oldest_pending_age_seconds',
      help: 'Age of the oldest delivery due and not yet sent (store-wide)',
      registers: r,
      async collect() {
        await fromStore(this, (s) => s.deliveryAgeSeconds);
      },
    }),
    deadLetters: new client.Gauge({
      name: 'vigil_deliveries_dead',
      help: 'Deliveries in the dead-letter state (store-wide)',
      registers: r,
      async collect() {
        await fromStore(this, (s) => s.dead);
      },
    }),
    eventLoopDelay: new client.Gauge({
      name: 'vigil_event_loop_delay_seconds',
      help: 'Event-loop delay since the previous scrape (p50, p99, max): how long a ready callback (a request, a socket message) waited',
      labelNames: ['stat'],
      registers: r,
      collect() {
        if (!loopDelay || loopDelay.count === 0) return;
        const s = (ns: number) => ns / 1e9;
        this.set({ stat: 'p50' }, s(loopDelay.percentile(50)));
        this.set({ stat: 'p99' }, s(loopDelay.percentile(99)));
        this.set({ stat: 'max' }, s(loopDelay.max));
        loopDelay.reset();
      },
    }),
    sqliteWrites: new client.Counter({
      name: 'vigil_sqlite_writes_total',
      help: "SQLite writes of this process by how they got the file's write lock: free, waited (another process held it), timed_out (store_busy)",
      labelNames: ['lock'],
      registers: r,
      collect() {
        const now = sqliteGate?.();
        if (!now) return;
        for (const [lock, v] of [
          ['free', now.immediate],
          ['waited', now.waited],
          ['timed_out', now.timedOut],
        ] as const)
          this.inc({ lock }, Math.max(0, v - (sqliteSeen[lock] ?? 0)));
        sqliteSeen = { free: now.immediate, waited: now.waited, timed_out: now.timedOut };
      },
    }),
    sqliteWriteWait: new client.Counter({
      name: 'vigil_sqlite_write_wait_seconds_total',
      help: "Time this process's SQLite writes spent waiting for another process's write lock",
      registers: r,
      collect() {
        const now = sqliteGate?.();
        if (!now) return;
        this.inc(Math.max(0, now.waitedMs / 1000 - sqliteWaitSeen));
        sqliteWaitSeen = now.waitedMs / 1000;
      },
    }),
    sqliteGroupCommits: new client.Counter({
      name: 'vigil_sqlite_group_commits_total',
      help: "Commits of this process's SQLite writes that waited for another process's lock: the writes that waited together share one commit (waited writes / commits = writes per commit)",
      registers: r,
      collect() {
        const now = sqliteGate?.();
        if (!now) return;
        this.inc(Math.max(0, now.groupCommits - sqliteCommitsSeen));
        sqliteCommitsSeen = now.groupCommits;
      },
    }),
    /** The SQLite store's write-gate counts, read at each scrape (not called on MongoDB). */
    watchSqliteWrites(read: () => SqliteWriteCounts) {
      sqliteGate = read;
      for (const lock of ['free', 'waited', 'timed_out']) m.sqliteWrites.inc({ lock }, 0);
    },
    storeUp: new client.Gauge({
      name: 'vigil_store_up',
      help: "1 when the store answered this scrape's queries in time, 0 when it failed or timed out (the store gauges then keep their last value)",
      registers: r,
      async collect() {
        if (gauges) this.set((await refresh()) ? 1 : 0);
      },
    }),
    /** Start known label values at 0 so alerts and rates see the series before the first event. */
    zeroKnownSeries() {
      for (const result of ['won', 'contended', 'error']) m.lockAcquisitions.inc({ result }, 0);
      for (const result of ['ok', 'lost']) m.lockExtensions.inc({ result }, 0);
      for (const outcome of ['swept', 'contended', 'swept_without_lock', 'failed']) m.sweeps.inc({ outcome }, 0);
      for (const command of ['extend', 'safe', 'cancel', 'false_alarm', 'acknowledge', 'resolve', 'record_attempt'])
        m.casConflicts.inc({ command }, 0);
      for (const loop of ['sweep', 'dispatch', 'retention']) m.loopErrors.inc({ loop }, 0);
      for (const reason of ['error', 'backlog']) m.fanoutDropped.inc({ reason }, 0);
      for (const kind of RETENTION_KINDS) m.retentionRecords.inc({ kind }, 0);
      for (const action of ['resend', 'cancel', 'note']) m.moderatorActions.inc({ action }, 0);
    },
    /** Connect the store-derived gauges (after the store is open). */
    observeStore(g: StoreGauges) {
      gauges = g;
    },
  };
  m.zeroKnownSeries();
  return m;
}

export type Metrics = ReturnType<typeof createMetrics>;
