/**
 * Store-wide gauges, read from the store at scrape time, so every replica reports the same
 * value and `max()` across replicas is right. They are read in one guarded step per scrape
 * (bounded by a timeout, never throwing): when the store fails, `vigil_store_up` is 0, the
 * store gauges keep their last value, and the process, lock and loop metrics are still
 * exported — an outage is exactly when the on-call needs them. A read's outcome is kept for
 * `cacheMs` (METRICS_STORE_CACHE_MS): scrapes within it, however many, cost no store query.
 */
import client from 'prom-client';
import { labelledGauge } from './labelled.js';

export interface StoreGauges {
  /** live timers past their deadline plus `graceMs` (GRACE_SECONDS): a timer in its grace is not overdue yet */
  overdue(graceMs?: number): Promise<{ count: number; oldest?: Date }>;
  countPendingEscalations(): Promise<number>;
  deliveryBacklog(): Promise<{ pending: number; oldestDue?: Date; dead: number }>;
  failedEscalations(limit: number): Promise<unknown[]>;
  stateCounts(): Promise<{ timers: { active: number; extended: number }; incidents: { active: number; acknowledged: number } }>;
  /** when the oldest open incident that nobody acknowledged was opened */
  oldestUnacknowledged(): Promise<Date | undefined>;
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
  unacknowledgedAgeSeconds: number;
}

/** How long a scrape waits for the store before reporting it down. */
export const STORE_SCRAPE_TIMEOUT_MS = 2000;
/** Dead-lettered escalations are few and each needs a human: the gauge counts up to this many. */
const FAILED_COUNT_CAP = 1000;

const age = (now: Date, then?: Date) => (then ? Math.max(0, (now.getTime() - then.getTime()) / 1000) : 0);

async function readStore(g: StoreGauges, graceMs: number): Promise<StoreSnapshot> {
  const [o, pending, failed, states, b, unacknowledged, now] = await Promise.all([
    g.overdue(graceMs),
    g.countPendingEscalations(),
    g.failedEscalations(FAILED_COUNT_CAP),
    g.stateCounts(),
    g.deliveryBacklog(),
    g.oldestUnacknowledged(),
    g.now(),
  ]);
  return {
    overdue: o.count,
    // how long the oldest has been due (its deadline plus the grace), not since its deadline
    overdueAgeSeconds: age(now, o.oldest && new Date(o.oldest.getTime() + graceMs)),
    escalationsPending: pending,
    escalationsFailed: failed.length,
    timersLive: states.timers,
    incidentsOpen: states.incidents,
    deliveriesPending: b.pending,
    deliveryAgeSeconds: age(now, b.oldestDue),
    dead: b.dead,
    unacknowledgedAgeSeconds: age(now, unacknowledged),
  };
}

export interface StoreMetricsOptions {
  /** how long a scrape waits for the store before reporting it down (ms) */
  timeoutMs?: number;
  /** a read's outcome (the snapshot, or the store being down) serves the scrapes of this long after it (ms); 0: none */
  cacheMs?: number;
  /** a monotonic clock (ms) */
  now?: () => number;
}

export function storeMetrics(r: client.Registry[], o: StoreMetricsOptions = {}) {
  const timeoutMs = o.timeoutMs ?? STORE_SCRAPE_TIMEOUT_MS;
  const cacheMs = o.cacheMs ?? 0;
  const now = o.now ?? (() => performance.now());
  let gauges: StoreGauges | undefined;
  /** GRACE_SECONDS in ms: a timer in its grace is not overdue yet */
  let graceMs = 0;
  // Last good read: kept through an outage so graphs do not gap; `vigil_store_up` says whether it is fresh.
  let snapshot: StoreSnapshot | undefined;
  let reading: Promise<boolean> | undefined;
  /** when the last read ended and whether the store answered it: a flood of scrapes is answered from it */
  let last: { at: number; up: boolean } | undefined;
  /** Every store gauge's collect awaits the same read: one round of queries per scrape; true when the store answered. */
  const read = (): Promise<boolean> =>
    (reading ??= (async () => {
      if (!gauges) return false;
      let timer: NodeJS.Timeout | undefined;
      const work = readStore(gauges, graceMs);
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
    })()
      .then((up) => {
        // measured from the end: a store that took the whole timeout is not asked again at once
        last = { at: now(), up };
        return up;
      })
      .finally(() => {
        reading = undefined;
      }));
  const refresh = (): Promise<boolean> => (last && now() - last.at < cacheMs ? Promise.resolve(last.up) : read());
  const fromStore = (name: string, help: string, pick: (s: StoreSnapshot) => number) =>
    new client.Gauge({
      name,
      help,
      registers: r,
      async collect() {
        await refresh();
        if (snapshot) this.set(pick(snapshot));
      },
    });
  const byStatusFromStore = <const S extends string>(
    name: string,
    help: string,
    statuses: readonly S[],
    pick: (s: StoreSnapshot) => Record<S, number>,
  ) =>
    labelledGauge({
      name,
      help,
      labels: { status: statuses },
      registers: r,
      async collect() {
        await refresh();
        if (snapshot) for (const status of statuses) this.set({ status }, pick(snapshot)[status]);
      },
    });
  const pageAfter = new client.Gauge({
    name: 'vigil_incident_unacknowledged_page_after_seconds',
    help: 'PAGE_UNACKNOWLEDGED_AFTER_SECONDS: an incident unacknowledged for longer pages the on-call (the alert compares the age with it)',
    registers: r,
  });

  return {
    escalationsPending: fromStore(
      'vigil_escalations_pending',
      'Expired timers whose escalation has not completed (store-wide)',
      (s) => s.escalationsPending,
    ),
    escalationsFailed: fromStore(
      'vigil_escalations_failed',
      'Expired timers whose escalation failed ESCALATION_MAX_ATTEMPTS times and is no longer retried (store-wide dead letters, counted up to 1000)',
      (s) => s.escalationsFailed,
    ),
    deliveriesPending: fromStore('vigil_deliveries_pending', 'Deliveries pending or being sent (store-wide)', (s) => s.deliveriesPending),
    timersLive: byStatusFromStore(
      'vigil_timers_live',
      'Live timers by status, active or extended (store-wide)',
      ['active', 'extended'],
      (s) => s.timersLive,
    ),
    incidentsOpen: byStatusFromStore(
      'vigil_incidents_open',
      'Open incidents by status, active or acknowledged (store-wide)',
      ['active', 'acknowledged'],
      (s) => s.incidentsOpen,
    ),
    overdue: fromStore(
      'vigil_timers_overdue',
      'Live timers past their deadline plus GRACE_SECONDS and not yet escalated (store-wide)',
      (s) => s.overdue,
    ),
    overdueAge: fromStore(
      'vigil_timers_overdue_oldest_age_seconds',
      'How long the oldest overdue timer has been due (since its deadline plus GRACE_SECONDS): the queue age (store-wide)',
      (s) => s.overdueAgeSeconds,
    ),
    deliveryAge: fromStore(
      'vigil_delivery_oldest_pending_age_seconds',
      'Age of the oldest delivery due and not yet sent (store-wide)',
      (s) => s.deliveryAgeSeconds,
    ),
    unacknowledgedAge: fromStore(
      'vigil_incident_unacknowledged_oldest_age_seconds',
      'How long the oldest open incident that no moderator has acknowledged has been open; 0 when every open one is acknowledged (store-wide)',
      (s) => s.unacknowledgedAgeSeconds,
    ),
    deadLetters: fromStore('vigil_deliveries_dead', 'Deliveries in the dead-letter state (store-wide)', (s) => s.dead),
    storeUp: new client.Gauge({
      name: 'vigil_store_up',
      help: "1 when the store answered this scrape's queries in time, 0 when it failed or timed out (the store gauges then keep their last value)",
      registers: r,
      async collect() {
        if (gauges) this.set((await refresh()) ? 1 : 0);
      },
    }),
    unacknowledgedPageAfter: pageAfter,
    /**
     * Connect the store-derived gauges (after the store is open); `graceMs`: GRACE_SECONDS in ms;
     * `pageAfterSeconds`: PAGE_UNACKNOWLEDGED_AFTER_SECONDS.
     */
    observeStore(g: StoreGauges, opts: { graceMs?: number; pageAfterSeconds?: number } = {}) {
      gauges = g;
      graceMs = opts.graceMs ?? 0;
      if (opts.pageAfterSeconds !== undefined) pageAfter.set(opts.pageAfterSeconds);
    },
  };
}
