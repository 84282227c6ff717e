/**
 * Sends due deliveries. Each tick leases what is due (the attempt is counted in the
 * store before the carrier is called) and sends without waiting for the others: one
 * slow or bad number never holds back the rest. A lease that lapses (crash, hang) makes
 * the delivery claimable again; a retry tells the carrier how the last attempt ended, so
 * a carrier that can look up what it accepted checks before sending again.
 * Outcomes are recorded in groups (app/group-commit.ts: one write for the sends that finish
 * together). While claims come back full, every finished send frees a slot and the
 * dispatcher claims again at once (a backlog drains at the carrier's pace, not one claim
 * per tick); with a per-carrier rate (`pacing`) it claims only what can start within half
 * a lease, so no lease lapses while a delivery waits for its turn.
 * `stop()` refuses new ticks and waits for the running one and its sends, so no send
 * starts after shutdown began and nothing is recorded after the store closes.
 *
 * No store call holds the dispatcher (stall guard): a tick whose claim has not answered within
 * `stallMs` is abandoned (counted as a dispatch loop error and logged); the next tick claims
 * again, and if the claim answers later, what it leased is sent under the same lease gate, or
 * nothing is started when the dispatcher stopped meanwhile (the leases lapse and another
 * dispatcher retries). Likewise a send whose store steps hang frees its slot `stallMs` after its
 * lease would allow a carrier request; its lease lapses and another dispatcher retries it. So
 * `stop()` waits at most `stallMs` for the tick and a lease plus `stallMs` for the sends, never
 * for a call that never returns.
 *
 * After "I'm safe" nothing alarming goes out: a claimed SOS of a false alarm is
 * superseded instead of sent, and a claimed all-clear (never claimed while its contact's
 * SOS is pending or sending) goes only if that SOS went out or may have, and only once that
 * contact's follow-ups are no longer on their way.
 *
 * The lease covers the whole attempt (docs/invariants.md, invariant 5): each send carries a
 * gate (sms/port.ts SendGate) that allows a carrier request only while its whole deadline
 * ends inside the lease, measured from before the claim on this process's monotonic clock,
 * less a margin. A dispatcher that is slow but alive (a long pacing wait, slow look-ups, a
 * store that stalls) therefore never sends once another one may have claimed the text again:
 * no second SOS, and no SOS after that contact's all-clear. An attempt that made no request
 * is given back (releaseClaim), not counted.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { GroupCommit } from '../app/group-commit.js';
import {
  allClearStep,
  attemptMayHaveBeenAccepted,
  deliveryKey,
  outcomeOf,
  startedNothing,
  type AttemptResult,
  type Delivery,
  type RetryPolicy,
} from '../domain/delivery.js';
import { OPEN_INCIDENT } from '../domain/incident.js';
import { maskPhone } from '../domain/messages.js';
import { unreachableBy, type Unreachable } from '../domain/notification.js';
import type { Metrics } from '../metrics.js';
import { deliveryEvent, type EventPublisher } from '../realtime/events.js';
import { notStarted, type Carrier, type OutgoingSms, type SendGate } from '../sms/port.js';
import type { Pacing } from '../sms/rate-limited.js';
import type { AttemptRecord } from '../store/port-batch.js';
import type { Store } from '../store/port.js';
import { noTracing, SpanKind, type Tracing } from '../telemetry/tracing.js';

export interface DispatchSettings {
  /** most sends in flight at once on this replica */
  maxInFlight: number;
  /** how long a claimed delivery is ours before another dispatcher may retry it */
  leaseMs: number;
  retry: RetryPolicy;
  /** each send continues the trace stored on its delivery; none when absent */
  tracing?: Tracing;
  /** the carrier's send rate, when limited: claims stay within what can start in half a lease */
  pacing?: Pacing;
  /** after an SOS text is recorded as sent (the person's inbox: "your contacts were texted") */
  onSosSent?: (d: Delivery) => Promise<unknown>;
  /** after a carrier refused a text for good because the contact cannot be reached (domain/notification.ts `unreachableBy`) */
  onUnreachable?: (d: Delivery, why: Unreachable) => Promise<unknown>;
  /**
   * True while a sweep escalates a backlog (Sweeper.escalatingBacklog on this replica,
   * SweepBacklog for any replica): claim no new texts meanwhile (sends in flight go on), for
   * at most `yieldMaxMs`, then claim regardless for as long before waiting again. Whoever
   * ends the wait ticks again: the scheduler after the sweep, or the heartbeat.
   */
  yieldTo?: () => boolean | Promise<boolean>;
  /** longest wait for `yieldTo` (ms, default 3000) */
  yieldMaxMs?: number;
  /**
   * how long a tick may wait for its claim (and a send for its store steps once its lease allows
   * no carrier request) before it is abandoned as stalled (ms; default half the lease: a claim
   * that slow leaves little of its lease to send in)
   */
  stallMs?: number;
}

/**
 * How much of a lease is kept free at its end: the store stamps the lease after this process
 * read its clock before the claim, so the lease ends later than measured here; the margin
 * covers the rest (a request's last bytes, timer slack).
 */
export const leaseMarginMs = (leaseMs: number): number => Math.min(1000, leaseMs / 10);
/** When a text that waits for another of its contact (the SOS, a follow-up) is looked at again. */
const WAIT_AGAIN_MS = 1000;

export class Dispatcher {
  private readonly inFlight = new Set<Promise<void>>();
  /** every send and the work a finished send started that need not hold its slot (the inbox entry): drain() waits for them */
  private readonly followUps = new Set<Promise<void>>();
  private ticking: Promise<number> | undefined;
  private stopped = false;
  private readonly tracing: Tracing;
  /** the outcomes of the sends that finish in one turn: one `recordAttempts` write (null: the lease was lost) */
  private readonly outcomes: GroupCommit<AttemptRecord, Delivery | null>;
  /** the last claim was full: more is probably due, so a freed slot claims again at once */
  private backlog = false;
  /** since when claims wait for a sweep's backlog (yieldTo); until when they may not wait again */
  private yieldingSince: number | undefined;
  private noYieldUntil = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: Store,
    private readonly carrier: Carrier,
    private readonly events: EventPublisher,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly settings: DispatchSettings,
    private readonly random: () => number = Math.random,
  ) {
    this.tracing = settings.tracing ?? noTracing();
    this.outcomes = new GroupCommit((list) => store.recordAttempts(list));
  }

  /** Claim what is due (up to the free slots) and start sending it; returns how many were started (0 when it stalled). */
  tick(): Promise<number> {
    if (this.stopped) return Promise.resolve(0);
    // one tick at a time: the scheduler's dispatch tick and the post-sweep kick may meet
    this.ticking ??= this.guardedTick().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  private get stallMs(): number {
    return this.settings.stallMs ?? this.settings.leaseMs / 2;
  }

  /** One claimAndSend, stopped waiting for once it stalls: the next tick claims again. */
  private guardedTick(): Promise<number> {
    const tick: TickState = { abandoned: false };
    const running = this.claimAndSend(tick);
    return bounded(running, this.stallMs, () => {
      tick.abandoned = true;
      this.stalled(
        'dispatch tick stalled: its claim (or the backlog check before it) did not answer; abandoned, the next tick claims again',
      );
      running.catch((err: unknown) => this.log.warn({ err }, 'an abandoned dispatch tick failed'));
      return 0;
    });
  }

  private stalled(message: string, fields: Record<string, unknown> = {}): void {
    this.metrics.loopErrors.inc({ loop: 'dispatch' });
    this.log.error({ ...fields, stallMs: this.stallMs }, message);
  }

  /**
   * Refuse new ticks, then wait for the running tick and every send in flight; safe to call twice.
   * Bounded: the tick by stallMs, the sends by a lease and stallMs (every send was claimed before
   * this call, so none may start a carrier request any more once that has passed).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.ticking?.catch(() => undefined);
    const { leaseMs } = this.settings;
    await bounded(this.drain(), leaseMs + this.stallMs, () =>
      this.stalled('stop: sends still waiting for the store are no longer waited for; their leases lapse', { sends: this.followUps.size }),
    );
  }

  private async claimAndSend(tick: TickState): Promise<number> {
    const { maxInFlight, leaseMs, pacing, yieldTo } = this.settings;
    const free = Math.min(maxInFlight - this.inFlight.size, pacing ? pacing.startableWithin(leaseMs / 2) : Number.POSITIVE_INFINITY);
    if (free <= 0) return 0;
    if (yieldTo && (await this.yielding(yieldTo))) {
      this.backlog = false; // no refills while we wait: the sweep's end (or the heartbeat) ticks again
      return 0;
    }
    if (this.stopped) return 0;
    // read before the claim: the store's lease starts later than this, so the bound is safe
    const claimedFrom = performance.now();
    const claimed = await this.store.claimDeliveries(free, leaseMs);
    const until = await this.leaseEnd(claimed, claimedFrom);
    if (tick.abandoned && this.stopped) {
      // stop() no longer waits for this tick, so the store may be closing: the leases lapse instead
      if (claimed.length > 0)
        this.log.warn({ claimed: claimed.length }, 'a stalled claim answered after stop(); its deliveries are left to lapse');
      return 0;
    }
    this.backlog = claimed.length === free;
    // stopped while claiming: what was just leased is sent anyway (the store is still open
    // until stop() resolves), so its lease does not have to lapse before a retry
    for (const d of claimed) {
      const sending = this.sendOne(d, until);
      this.track(sending);
      // no carrier request starts after `until`; what is left then is store steps, bounded by stallMs
      const slot = bounded(sending, Math.max(0, until - performance.now()) + this.stallMs, () =>
        this.stalled('delivery attempt stalled in the store; its slot is freed and its lease left to lapse', { delivery: d.key }),
      );
      const p = slot.finally(() => {
        this.inFlight.delete(p);
        this.refill();
      });
      this.inFlight.add(p);
    }
    return claimed.length;
  }

  /**
   * Until when (this process's monotonic clock) the claimed leases surely hold, less the margin:
   * the leases' end as the store stamped it (`leaseUntil`, the store's clock), measured against
   * the store's clock now, so a slow claim does not eat the lease. Without the stamps or the
   * store's clock, the bound read before the claim (the lease cannot have started before it).
   */
  private async leaseEnd(claimed: Delivery[], claimedFrom: number): Promise<number> {
    const { leaseMs } = this.settings;
    const margin = leaseMarginMs(leaseMs);
    const before = claimedFrom + leaseMs - margin;
    const ends = claimed.map((d) => d.leaseUntil?.getTime()).filter((t): t is number => t !== undefined);
    if (ends.length === 0) return before;
    // read this clock before asking the store's: the store's answer is then no earlier than its
    // clock at `asked`, so the end computed from it is never later than the real one
    const asked = performance.now();
    const storeNow = await this.store.now().catch(() => undefined);
    if (!storeNow) return before;
    return Math.max(before, asked + Math.min(...ends) - storeNow.getTime() - margin);
  }

  /** Whether to wait for a sweep's backlog now: yes while it lasts, at most yieldMaxMs, then not for as long. */
  private async yielding(yieldTo: () => boolean | Promise<boolean>): Promise<boolean> {
    const max = this.settings.yieldMaxMs ?? 3000;
    if (performance.now() < this.noYieldUntil || !(await yieldTo())) {
      this.yieldingSince = undefined;
      return false;
    }
    const now = performance.now();
    this.yieldingSince ??= now;
    if (now - this.yieldingSince < max) return true;
    this.yieldingSince = undefined;
    this.noYieldUntil = now + max;
    return false;
  }

  /** A send finished while a backlog waits: claim again once a quarter of the slots is free (fewer, larger claims). */
  private refill(): void {
    if (!this.backlog || this.stopped || this.ticking) return;
    const { maxInFlight, leaseMs, pacing } = this.settings;
    const free = maxInFlight - this.inFlight.size;
    const startable = pacing ? pacing.startableWithin(leaseMs / 2) : free;
    if (Math.min(free, startable) < Math.max(1, Math.floor(maxInFlight / 4)) && this.inFlight.size > 0) return;
    void this.tick().catch((err: unknown) => {
      this.metrics.loopErrors.inc({ loop: 'dispatch' });
      this.log.error({ err }, 'dispatch refill failed; the next tick retries');
    });
  }

  /** Wait for every send in flight and what they started (tests; stop() bounds it). */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0 || this.followUps.size > 0) await Promise.allSettled([...this.inFlight, ...this.followUps]);
  }

  /** Work drain() waits for that holds no slot: a send (its slot is bounded apart), the inbox entry after it. */
  private track(p: Promise<void>): void {
    this.followUps.add(p);
    void p.finally(() => this.followUps.delete(p));
  }

  get busy(): number {
    return this.inFlight.size;
  }

  /** Why this claimed delivery must not be sent now, if so: superseded (final) or waiting for another text of its contact. */
  private async hold(d: Delivery): Promise<'superseded' | 'wait' | null> {
    if (d.kind === 'sos') {
      // after I'm safe or a moderator's resolve an SOS that has not gone out never does
      const incident = await this.store.getIncident(d.incidentId);
      return incident && !OPEN_INCIDENT.includes(incident.status) ? 'superseded' : null;
    }
    if (d.kind === 'moved') {
      // the follow-up is news only while the incident is open: after I'm safe or a resolve it is not sent
      const incident = await this.store.getIncident(d.incidentId);
      if (!incident || !OPEN_INCIDENT.includes(incident.status)) return 'superseded';
    }
    const step = allClearStep(await this.store.getDelivery(deliveryKey(d.incidentId, d.contactId, 'sos')));
    if (step !== 'send') return step === 'wait' ? 'wait' : 'superseded';
    if (d.kind === 'all_clear') {
      // every follow-up of this contact is out (or will never go) before the all-clear: never after it
      const moved = await this.store.getDelivery(deliveryKey(d.incidentId, d.contactId, 'moved'));
      if (moved && (moved.status === 'pending' || moved.status === 'sending')) return 'wait';
    }
    return null;
  }

  private async notSent(d: Delivery, why: 'superseded' | 'wait'): Promise<void> {
    if (why === 'wait') {
      // give the claim back (its attempt uncounted) and look again shortly
      await this.giveBack(d, WAIT_AGAIN_MS, 'waiting for another text of this contact');
      return;
    }
    const reason = d.kind === 'sos' ? 'incident_closed' : d.kind === 'moved' ? 'incident_closed_or_sos_not_sent' : 'sos_not_sent';
    const done = await this.store.supersedeClaimed(d.key, d.attempts, reason);
    if (!done) return;
    this.metrics.deliveries.inc({ carrier: 'none', outcome: 'superseded' });
    this.log.info(
      { delivery: d.key, incident: d.incidentId, kind: d.kind, reason, recipient: maskPhone(d.phone) },
      'delivery superseded, not sent',
    );
    this.events.publish(deliveryEvent(done, maskPhone));
  }

  /** Nothing was sent: the claim goes back to pending, due in `inMs`, its attempt not counted. */
  private async giveBack(d: Delivery, inMs: number, why: string): Promise<void> {
    const now = await this.store.now();
    const back = await this.store.releaseClaim(d.key, d.attempts, new Date(now.getTime() + inMs));
    if (!back) return;
    this.metrics.deliveries.inc({ carrier: 'none', outcome: 'not_started' });
    this.log.info({ delivery: d.key, incident: d.incidentId, kind: d.kind, why }, 'delivery not attempted; claim given back');
    this.events.publish(deliveryEvent(back, maskPhone));
  }

  /** The bound of one attempt: carrier requests only while they end before `until`; re-checked after a wait. */
  private gateFor(d: Delivery, until: number): SendGate {
    return {
      allows: (ms) => performance.now() + ms <= until,
      stillWanted: async () => performance.now() < until && (await this.hold(d)) === null,
    };
  }

  private sendOne(d: Delivery, until: number): Promise<void> {
    const attributes = {
      'vigil.delivery.key': d.key,
      'vigil.incident.id': d.incidentId,
      'vigil.delivery.kind': d.kind,
      'vigil.delivery.attempt': d.attempts,
    };
    return this.tracing.inSpan('vigil.sms.send', { kind: SpanKind.CONSUMER, parent: d.traceparent ?? null, attributes }, (span) =>
      this.sendTraced(d, until, (status) => {
        span.setAttribute('vigil.delivery.outcome', status);
        if (status === 'failed' || status === 'dead') span.setStatus({ code: SpanStatusCode.ERROR, message: status });
      }),
    );
  }

  private async sendTraced(d: Delivery, until: number, traceOutcome: (status: string) => void): Promise<void> {
    try {
      const held = await this.hold(d);
      if (held) return await this.notSent(d, held);
      const { retry } = this.settings;
      const gate = this.gateFor(d, until);
      let result: AttemptResult;
      if (d.attempts > retry.maxAttempts) {
        // claimed again after a lapsed lease on its last attempt: do not exceed the cap
        result = { ok: false, carrier: d.carrier ?? this.carrier.name, retryable: true, code: 'attempts_exhausted' };
      } else if (!gate.allows(0)) {
        result = notStarted(this.carrier.name, 'lease');
      } else {
        result = await this.carrier
          .send({ to: d.phone, body: d.body, idempotencyKey: d.key, gate, ...earlierOf(d) })
          .catch((err: unknown): AttemptResult => {
            this.log.warn({ err, delivery: d.key }, 'carrier threw; treating as retryable');
            return { ok: false, carrier: this.carrier.name, retryable: true, code: 'carrier_error' };
          });
      }
      if (startedNothing(result)) {
        traceOutcome('not_started');
        // superseded or waiting meanwhile (checked after a pacing wait): as before a send; else the lease ran short
        const now = performance.now() < until ? await this.hold(d) : null;
        if (now) return await this.notSent(d, now);
        // the lease may lapse any moment: due again at once, for whoever claims it next
        return await this.giveBack(d, 0, 'the lease ran short before a carrier request could start');
      }
      const o = outcomeOf(retry, Math.min(d.attempts, retry.maxAttempts), result, this.random);
      const now = await this.store.now();
      const recorded = await this.outcomes.add({
        key: d.key,
        attempt: d.attempts,
        outcome: {
          status: o.status,
          carrier: result.carrier,
          providerMessageId: o.status === 'sent' ? o.providerMessageId : undefined,
          error: o.status === 'sent' ? undefined : o.error,
          nextAttemptAt: o.status === 'pending' ? new Date(now.getTime() + o.retryInMs) : undefined,
          maybeAccepted: !result.ok && attemptMayHaveBeenAccepted(result),
        },
      });
      this.metrics.deliveries.inc({ carrier: result.carrier, outcome: o.status === 'pending' ? 'retry' : o.status });
      traceOutcome(o.status);
      if (!recorded) {
        this.metrics.casConflicts.inc({ command: 'record_attempt' });
        this.log.warn({ delivery: d.key, attempt: d.attempts }, 'delivery lease lost before the outcome was recorded');
        return;
      }
      if (o.status === 'sent' && d.kind === 'sos')
        this.metrics.sosSmsLatency.observe(Math.max(0, (now.getTime() - d.createdAt.getTime()) / 1000));
      const level = o.status === 'dead' || o.status === 'failed' ? 'error' : 'info';
      this.log[level](
        {
          delivery: d.key,
          incident: d.incidentId,
          kind: d.kind,
          attempt: d.attempts,
          carrier: result.carrier,
          status: o.status,
          recipient: maskPhone(d.phone),
          error: o.status === 'sent' ? undefined : o.error,
        },
        'delivery attempt recorded',
      );
      this.events.publish(deliveryEvent(recorded, maskPhone));
      if (recorded.kind === 'sos' && recorded.status === 'pending') await this.endAfterFalseAlarm(recorded);
      // the inbox entry does not hold the send slot: the next text need not wait for it (drain() does);
      // `o`, not `recorded`: a receipt that came before the outcome may already have moved it on (delivered)
      if (recorded.kind === 'sos' && o.status === 'sent') this.track(this.sosSent(recorded));
      const unreachable = o.status === 'failed' ? unreachableBy(o.error) : undefined;
      if (unreachable) this.track(this.unreachable(recorded, unreachable));
    } catch (err) {
      // store trouble: the lease lapses and another tick retries with the same key
      this.metrics.loopErrors.inc({ loop: 'dispatch' });
      this.log.error({ err, delivery: d.key }, 'delivery attempt could not be recorded');
    }
  }

  /** Tells the person their contacts were texted (keyed per incident: the first sent SOS records it). */
  private async sosSent(d: Delivery): Promise<void> {
    await this.settings
      .onSosSent?.(d)
      .catch((err: unknown) => this.log.warn({ err, delivery: d.key }, 'could not record the notification'));
  }

  /** Tells the person (and the contact's state) that a carrier says this contact cannot be texted. */
  private async unreachable(d: Delivery, why: Unreachable): Promise<void> {
    await this.settings
      .onUnreachable?.(d, why)
      .catch((err: unknown) => this.log.warn({ err, delivery: d.key }, 'could not record that the contact is unreachable'));
  }

  /**
   * An SOS back to pending after "I'm safe" (or a resolve) arrived during its attempt: supersede it now
   * rather than at its next claim, so its contact's all-clear does not wait out the backoff.
   */
  private async endAfterFalseAlarm(sos: Delivery): Promise<void> {
    const incident = await this.store.getIncident(sos.incidentId);
    if (!incident || OPEN_INCIDENT.includes(incident.status)) return;
    for (const d of await this.store.supersedePendingSos(sos.incidentId)) this.events.publish(deliveryEvent(d, maskPhone));
  }
}

/** Whether the tick that runs a claimAndSend was abandoned as stalled. */
interface TickState {
  abandoned: boolean;
}

/** `p`, or `onStall()`'s answer once `ms` pass without `p` settling (`p` goes on; its end is not waited for). */
function bounded<T>(p: Promise<T>, ms: number, onStall: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const stall = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(onStall()), ms);
  });
  return Promise.race([p, stall]).finally(() => clearTimeout(timer));
}

/** A retry tells the carrier how the last attempt ended, so it can look before sending again. */
const earlierOf = (d: Delivery): Pick<OutgoingSms, 'earlier'> =>
  d.attempts > 1 ? { earlier: { since: d.createdAt, ...(d.lastError === undefined ? {} : { lastError: d.lastError }) } } : {};
