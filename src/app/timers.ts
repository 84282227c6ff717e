/**
 * Timer use cases: what the REST API does for a person. Each command is one CAS in the
 * store; when the CAS finds the timer in another state, the domain decides whether
 * that is an idempotent repeat (answer with the current state) or a conflict.
 */
import { Conflict, DomainError, Invalid, NotFound } from '../domain/errors.js';
import type { Incident } from '../domain/incident.js';
import { checkDuration, type TimerLimits } from '../domain/limits.js';
import { decide, type GeoPoint, type Meeting, type Timer, type TimerCommand, type TimerStatus } from '../domain/timer.js';
import type { Metrics } from '../metrics.js';
import { timerEvent, type EventPublisher } from '../realtime/events.js';
import type { IdempotencyClaim, KeyedCommandResult, Store } from '../store/port.js';
import { noTracing, type Tracing } from '../telemetry/tracing.js';
import { timerView } from '../wire/views.js';
import { AllClear } from './all-clear.js';
import { nextCursor, type ChangePosition } from './cursor.js';
import { newId } from './ids.js';
import type { SmsBudget } from './sms-budget.js';

export interface ArmInput {
  durationSeconds: number;
  locationName?: string;
  location?: GeoPoint;
  meeting?: Meeting;
  /** IANA time zone name (the route refuses any other: `unknown_time_zone`) */
  timeZone?: string;
}

export interface Caller {
  userId: string;
  displayName?: string;
}

export interface CommandResult {
  timer: Timer;
  /** set when I'm-safe arrived after the SOS */
  incident?: Incident;
  /** this Idempotency-Key already applied the command: nothing changed, the timer as it is now */
  replayed?: boolean;
}

const idempotencyMismatch = () =>
  new DomainError(
    'idempotency_mismatch',
    'idempotency_key_reused',
    'this Idempotency-Key was used with a different request (body, command or timer)',
  );

const notFound = (id: string) => NotFound('timer_not_found', `no timer ${id} for this user`);
const wrongState = (t: Timer, command: TimerCommand) =>
  Conflict('timer_wrong_state', `cannot ${command} a timer that is ${t.status}`, { status: t.status, timer: timerView(t) });

export class TimerService {
  private readonly allClear: AllClear;

  constructor(
    private readonly store: Store,
    private readonly events: EventPublisher,
    private readonly limits: TimerLimits,
    private readonly metrics: Metrics,
    /** shared with the escalator */
    smsBudget: SmsBudget,
    /** the request's trace is stored with the timer and the all-clear texts, to be continued later */
    private readonly tracing: Tracing = noTracing(),
  ) {
    this.allClear = new AllClear(store, events, smsBudget, () => this.metrics.casConflicts.inc({ command: 'false_alarm' }));
  }

  async arm(caller: Caller, input: ArmInput, idem?: { key: string; fingerprint: string }): Promise<{ timer: Timer; replayed: boolean }> {
    checkDuration(this.limits, input.durationSeconds, 'durationSeconds');
    const now = await this.store.now();
    const r = await this.store.armTimer(
      {
        id: newId('tmr'),
        userId: caller.userId,
        startedAt: now,
        expiresAt: new Date(now.getTime() + input.durationSeconds * 1000),
        locationName: input.locationName,
        location: input.location,
        meeting: input.meeting,
        displayName: caller.displayName,
        timeZone: input.timeZone,
        traceparent: this.tracing.traceparent(),
      },
      idem,
    );
    switch (r.kind) {
      case 'created':
        this.events.publish(timerEvent('timer.armed', r.timer));
        return { timer: r.timer, replayed: false };
      case 'replayed':
        return { timer: r.timer, replayed: true };
      case 'idempotency_mismatch':
        throw idempotencyMismatch();
      case 'live_timer_exists':
        throw Conflict('live_timer_exists', 'you already have a running timer; extend, check in or cancel it first', {
          timer: r.timer.id,
          status: r.timer.status,
        });
    }
  }

  /** Escalations dead-lettered after too many failures (moderators), oldest deadline first. */
  failedEscalations(limit = 100): Promise<Timer[]> {
    return this.store.failedEscalations(limit);
  }

  /**
   * A moderator sends a dead-lettered escalation back to the sweep (after fixing its
   * cause): pending again with a fresh count, audited. Repeats answer with the current timer.
   */
  async retryEscalation(timerId: string, actor: string): Promise<Timer> {
    const t = (await this.store.retryEscalation(timerId, actor)) ?? (await this.store.getTimer(timerId));
    if (!t) throw notFound(timerId);
    return t;
  }

  /** The store's clock (what "time left" is measured against). */
  now(): Promise<Date> {
    return this.store.now();
  }

  async get(caller: Caller, id: string): Promise<Timer> {
    const t = await this.store.getTimer(id, caller.userId);
    if (!t) throw notFound(id);
    return t;
  }

  /**
   * A person's timers. Passing `cursor` back as `since` returns everything that changed
   * after this read (possibly again, never missing any; see nextCursor), which is how
   * clients catch up after a reconnect. `readAt` is the store's time before the query.
   */
  async list(
    userId: string,
    filter: { status?: TimerStatus; since?: ChangePosition; limit?: number },
  ): Promise<{ timers: Timer[]; cursor: ChangePosition; more: boolean; readAt: Date }> {
    const readAt = await this.store.now();
    const timers = await this.store.listTimers(userId, {
      status: filter.status,
      since: filter.since?.since,
      sinceId: filter.since?.sinceId,
      limit: filter.limit,
    });
    return { timers, readAt, ...nextCursor(timers, filter, readAt, this.store.changeLagMs()) };
  }

  /**
   * With an Idempotency-Key (`idem`), a retry of a command that applied answers the timer as
   * it is now and changes nothing; the key is recorded by the same write as the CAS.
   */
  async extend(caller: Caller, id: string, seconds: number, idem?: IdempotencyClaim): Promise<CommandResult> {
    checkDuration(this.limits, seconds, 'seconds');
    const caps = { maxExtensions: this.limits.maxExtensions, maxTotalSeconds: this.limits.maxTotalSeconds };
    const keyed = idem ? await this.store.extendTimerKeyed(id, caller.userId, seconds, caps, idem) : undefined;
    if (keyed && keyed.kind !== 'refused') return this.keyedAnswer(keyed);
    const done = keyed ? null : await this.store.extendTimer(id, caller.userId, seconds, caps);
    if (done) {
      this.events.publish(timerEvent('timer.extended', done));
      return { timer: done };
    }
    this.metrics.casConflicts.inc({ command: 'extend' });
    const cur = await this.get(caller, id);
    if (decide('extend', cur.status).kind === 'apply') {
      // live, so one of the extension rules refused it
      if (cur.extensions >= this.limits.maxExtensions)
        throw Conflict('extension_limit', `a timer can be extended at most ${this.limits.maxExtensions} times`, { status: cur.status });
      if (cur.expiresAt.getTime() <= (await this.store.now()).getTime())
        throw Conflict('deadline_passed', 'the deadline has passed; the timer can no longer be extended', { status: cur.status });
      throw Invalid('total_duration_exceeded', `a timer cannot run longer than ${this.limits.maxTotalSeconds} seconds in total`, {
        status: cur.status,
        maxTotalSeconds: this.limits.maxTotalSeconds,
      });
    }
    throw wrongState(cur, 'extend');
  }

  async checkIn(caller: Caller, id: string, idem?: IdempotencyClaim): Promise<CommandResult> {
    return this.resolve(caller, id, 'safe', idem);
  }

  async cancel(caller: Caller, id: string, idem?: IdempotencyClaim): Promise<CommandResult> {
    return this.resolve(caller, id, 'cancel', idem);
  }

  /**
   * "I'm safe" or cancel sent with the duress PIN: the same CAS, event and answer as a genuine
   * one, then `raise` opens the silent SOS. After the SOS (the timer expired), the answer is the
   * one a genuine check-in gets (the incident as a false alarm), but the incident stays open:
   * `raise` marks it duress. The resolving CAS records the SOS as owed (`duressPending`), so a
   * crash before `raise` completes it loses nothing: the sweep's repair, or a replay of the same
   * key, raises it. A replayed key whose SOS is no longer owed raises nothing (the first request did).
   */
  async resolveUnderDuress(
    caller: Caller,
    id: string,
    command: 'safe' | 'cancel',
    idem: IdempotencyClaim | undefined,
    raise: (timer: Timer) => Promise<void>,
  ): Promise<CommandResult> {
    return this.resolve(caller, id, command, idem, raise);
  }

  /** A keyed command that applied now (event, as without a key), or was applied before (no event). */
  private keyedAnswer(r: Exclude<KeyedCommandResult, { kind: 'refused' }>): CommandResult {
    if (r.kind === 'idempotency_mismatch') throw idempotencyMismatch();
    if (r.kind === 'replayed') return { timer: r.timer, replayed: true };
    const kind = r.timer.status === 'safe' ? 'timer.safe' : r.timer.status === 'cancelled' ? 'timer.cancelled' : 'timer.extended';
    this.events.publish(timerEvent(kind, r.timer));
    return { timer: r.timer };
  }

  private async resolve(
    caller: Caller,
    id: string,
    command: 'safe' | 'cancel',
    idem?: IdempotencyClaim,
    duress?: (timer: Timer) => Promise<void>,
  ): Promise<CommandResult> {
    const to = command === 'safe' ? 'safe' : 'cancelled';
    // under duress the CAS itself records the silent SOS as owed (invariant 4): a crash before `duress` completes it leaves it to the sweep
    const opts = duress ? { duress: true } : undefined;
    const keyed = idem ? await this.store.resolveTimerKeyed(id, caller.userId, to, idem, opts) : undefined;
    if (keyed && keyed.kind !== 'refused') {
      const answer = this.keyedAnswer(keyed);
      // a replay raises only what the first request left owed (it died between its two writes)
      if (duress && (!answer.replayed || answer.timer.duressPending)) await duress(answer.timer);
      return answer;
    }
    const done = keyed ? null : await this.store.resolveTimer(id, caller.userId, to, opts);
    if (done) {
      this.events.publish(timerEvent(command === 'safe' ? 'timer.safe' : 'timer.cancelled', done));
      if (duress) await duress(done);
      return { timer: done };
    }
    const cur = await this.get(caller, id);
    const d = decide(command, cur.status);
    if (d.kind === 'noop') return { timer: cur };
    if (d.kind === 'false_alarm') return duress ? this.disguisedFalseAlarm(caller, cur, duress) : this.falseAlarm(caller, cur);
    this.metrics.casConflicts.inc({ command });
    throw wrongState(cur, command);
  }

  /**
   * The duress PIN after the SOS: the incident stays open and becomes a duress incident (`raise`);
   * the answer is what a genuine "I'm safe" answers (the incident as a false alarm, all-clear owed).
   */
  private async disguisedFalseAlarm(caller: Caller, timer: Timer, raise: (timer: Timer) => Promise<void>): Promise<CommandResult> {
    const incident = timer.incidentId ? await this.store.getIncident(timer.incidentId) : await this.store.incidentForTimer(timer.id);
    await raise(timer);
    if (!incident) {
      throw Conflict('escalation_in_progress', 'the SOS for this timer is being sent right now; retry in a second', {
        status: timer.status,
        retryAfterSeconds: 1,
      });
    }
    const now = await this.store.now();
    const closed = {
      ...incident,
      status: 'false_alarm' as const,
      resolvedAt: now,
      resolvedBy: caller.userId,
      updatedAt: now,
      allClear: 'pending' as const,
    };
    return { timer, incident: closed };
  }

  /**
   * I'm safe after the SOS: the timer stays expired, its incident (its own, or the open one it
   * joined: timer.incidentId) becomes a false alarm, contacts hear they are safe. The CAS records
   * the all-clear as owed; this request completes it, and so does a repeat of the request or the
   * sweeper's repair if it fails.
   */
  private async falseAlarm(caller: Caller, timer: Timer): Promise<CommandResult> {
    const incident = timer.incidentId ? await this.store.getIncident(timer.incidentId) : await this.store.incidentForTimer(timer.id);
    if (!incident) {
      throw Conflict('escalation_in_progress', 'the SOS for this timer is being sent right now; retry in a second', {
        status: timer.status,
        retryAfterSeconds: 1,
      });
    }
    return { timer, incident: await this.allClear.personSafe(incident, caller, this.tracing.traceparent()) };
  }
}
