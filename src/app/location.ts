/**
 * Live location use cases: a person posts fixes while their timer is live (or while its
 * incident is open); the latest kept fix goes to the cache (LatestFixes), the trail to the
 * store. Before an SOS the fixes this replica received are buffered and flushed every
 * LOCATION_FLUSH_SECONDS and when the timer ends; once the incident is open each kept fix
 * is stored at once and pushed to moderators. The escalation reads the freshest fix:
 * cache first, else the store's last flushed one (a cache that is down is never an error).
 */
import type { Logger } from 'pino';
import { newDelivery, type Delivery, type NewDelivery } from '../domain/delivery.js';
import { Invalid, NotFound, Conflict, RateLimited } from '../domain/errors.js';
import { hasTimer, OPEN_INCIDENT, trailTimersOf, type Incident } from '../domain/incident.js';
import { fixTimeProblem, fresher, keepFix, movedBeyond, rateDecision, type FixRateRule, type StoredFix } from '../domain/location.js';
import { lastSeenAt } from '../domain/messages.js';
import { isLive, type Timer } from '../domain/timer.js';
import type { LatestFixes } from '../location/port.js';
import { locationEvent, type EventPublisher, type VigilEvent } from '../realtime/events.js';
import type { Store } from '../store/port.js';
import { movedMessage, perLanguage } from '../texts/render.js';
import type { Caller } from './timers.js';
import { contactTexts } from './contact-texts.js';
import type { SmsBudget } from './sms-budget.js';

export interface LocationSettings extends FixRateRule {
  /** contacts get one `moved` text when a fix is farther than this from where the SOS said (m) */
  followUpMeters: number;
  /** at most this many fixes in a trail answer (the latest ones) */
  trailLimit: number;
  /** how often each replica stores the fixes it buffered (ms): how far a trail read without the cache may lag */
  flushMs: number;
}

export interface FixInput {
  lat: number;
  lng: number;
  accuracyM?: number;
  /** when the phone took it; default: now */
  at?: Date;
}

export interface PostResult {
  kept: boolean;
  /** why a fix was not kept */
  reason?: 'too_close' | 'older_than_latest';
  fix: StoredFix;
  incidentId?: string;
}

/**
 * What a person may read: the trail, and whether an incident is open. The same through every
 * replica (docs/location.md): every stored fix plus the newest kept fix from the shared cache.
 */
export interface Trail {
  /** the timer asked about; for an incident, its own timer (absent for a panic with no timer behind it) */
  timerId?: string;
  incidentId?: string;
  fixes: StoredFix[];
  /**
   * true: the shared cache was read, so the last fix is the newest any replica kept (the one an
   * SOS written now would use). false: the cache could not be read; the trail holds what is
   * stored, which may lag the phone by up to `maxLagMs`.
   */
  fresh: boolean;
  /** with `fresh: false`: how far behind the newest kept fix the trail may be (ms) */
  maxLagMs?: number;
}

export interface LocationCounters {
  inc(outcome: 'kept' | 'dropped' | 'rate_limited' | 'cache_error' | 'flush_error'): void;
}

const MAX_BUFFERED_PER_TIMER = 500;

/** Per person, this replica's view: recent attempts (this host's monotonic clock) and the last kept fix (the store's clock). */
interface RateState {
  attempts: number[];
  lastKeptAt?: number;
}

export class LocationService {
  /** fixes received here and not flushed yet, by timer */
  private readonly pending = new Map<string, StoredFix[]>();
  private readonly rate = new Map<string, RateState>();
  /** the store's clock at the last post (the kept-fix interval is measured on it, not on this host's clock) */
  private lastNow = 0;

  constructor(
    private readonly store: Store,
    private readonly cache: LatestFixes,
    private readonly events: EventPublisher,
    private readonly smsBudget: SmsBudget,
    private readonly settings: LocationSettings,
    private readonly log: Pick<Logger, 'warn' | 'info'>,
    private readonly counters: LocationCounters = { inc: () => {} },
    /** this host's monotonic clock (ms): the attempt budget is counted before the store (and its clock) is read */
    private readonly hostMs: () => number = () => performance.now(),
  ) {}

  /** Post one fix for the caller's own timer. */
  async post(caller: Caller, timerId: string, input: FixInput): Promise<PostResult> {
    this.admit(caller.userId);
    const timer = await this.store.getTimer(timerId, caller.userId);
    if (!timer) throw NotFound('timer_not_found', `no timer ${timerId} for this user`);
    // a timer linked to an open incident (its own, or the one it joined) takes fixes for that incident
    const incident = isLive(timer.status) ? null : await this.openIncidentOf(timer);
    if (!isLive(timer.status) && !incident)
      throw Conflict('timer_not_live', `fixes are taken only while the timer runs or its SOS is open; this timer is ${timer.status}`, {
        status: timer.status,
      });
    return this.accept(caller, { trailId: timer.id, startedAt: timer.startedAt }, incident, input);
  }

  /**
   * Post one fix for the caller's own open incident (a panic with no timer behind it has its
   * trail under the incident's slot; one with a timer, under that timer's): stored at once and
   * pushed to moderators, as every fix after an SOS.
   */
  async postForIncident(caller: Caller, incidentId: string, input: FixInput): Promise<PostResult> {
    this.admit(caller.userId);
    const incident = await this.store.getIncident(incidentId);
    if (!incident || incident.userId !== caller.userId) throw NotFound('incident_not_found', `no incident ${incidentId} for this user`);
    if (!OPEN_INCIDENT.includes(incident.status))
      throw Conflict('incident_wrong_state', `fixes are taken only while the SOS is open; this incident is ${incident.status}`, {
        status: incident.status,
      });
    return this.accept(caller, { trailId: incident.timerId, startedAt: incident.createdAt }, incident, input);
  }

  /** A fix for the trail `trailId` (a timer's id, or a panic incident's slot): checks, drops, then kept. */
  private async accept(
    caller: Caller,
    target: { trailId: string; startedAt: Date },
    incident: Incident | null,
    input: FixInput,
  ): Promise<PostResult> {
    const timerId = target.trailId;
    const now = await this.store.now();
    const at = input.at ?? now;
    const problem = fixTimeProblem(at, now, target.startedAt);
    if (problem === 'in_future') throw Invalid('fix_in_future', 'the fix time `at` is in the future');
    if (problem === 'before_timer') throw Invalid('fix_before_timer', 'the fix time `at` is before the timer started');
    this.checkInterval(caller.userId, now.getTime());

    const fix: StoredFix = {
      timerId,
      userId: caller.userId,
      lat: input.lat,
      lng: input.lng,
      at,
      ...(input.accuracyM === undefined ? {} : { accuracyM: input.accuracyM }),
    };
    const last = await this.latest(timerId);
    const base = { fix, ...(incident ? { incidentId: incident.id } : {}) };
    if (last && at.getTime() <= last.at.getTime()) return this.dropped(base, 'older_than_latest');
    if (!keepFix(last, fix)) return this.dropped(base, 'too_close');

    this.rateOf(caller.userId).lastKeptAt = now.getTime();
    this.counters.inc('kept');
    const cached = await this.cache.set(fix).then(
      () => true,
      (err: unknown) => {
        this.cacheFailed(err, 'set');
        return false;
      },
    );
    if (incident) {
      // after the SOS every kept fix is stored at once: moderators read the trail from the store
      await this.store.addFixes([fix]);
      this.events.publish(locationEvent(fix, incident.id));
      await this.followUp(incident, fix, now).catch((err: unknown) =>
        this.log.warn({ err, incident: incident.id }, 'moved follow-up could not be created; the next fix tries again'),
      );
    } else {
      // a fix the other replicas cannot read from the cache is stored at once, never left in this
      // replica's memory only: the trail on every replica and the SOS still end with it
      if (cached) this.buffer(fix);
      else await this.storeNow(fix);
      this.events.publish(locationEvent(fix));
    }
    return { kept: true, ...base };
  }

  /** The trail of the caller's own timer. */
  async ownTrail(caller: Caller, timerId: string): Promise<Trail> {
    const timer = await this.store.getTimer(timerId, caller.userId);
    if (!timer) throw NotFound('timer_not_found', `no timer ${timerId} for this user`);
    return { timerId, ...(timer.incidentId ? { incidentId: timer.incidentId } : {}), ...(await this.trail([timer.id])) };
  }

  /**
   * The trail of an incident's timer, for moderators: only while the incident is open (before
   * an SOS, and after it is closed, nobody but the person reads fixes). Not found otherwise.
   */
  async incidentTrail(incidentId: string): Promise<Trail> {
    const incident = await this.store.getIncident(incidentId);
    if (!incident) throw NotFound('incident_not_found', `no incident ${incidentId}`);
    return this.trailOfIncident(incident);
  }

  /**
   * incidentTrail for several incidents in one call (the console's reconnect reads every open
   * card's trail at once, one request instead of one per card); ids with no incident are left out.
   */
  async incidentTrails(incidentIds: readonly string[]): Promise<Trail[]> {
    const incidents = await Promise.all(incidentIds.map((id) => this.store.getIncident(id)));
    return Promise.all(incidents.filter((i): i is Incident => i !== null).map((i) => this.trailOfIncident(i)));
  }

  private async trailOfIncident(incident: Incident): Promise<Trail> {
    const incidentId = incident.id;
    const timerId = hasTimer(incident) ? incident.timerId : undefined;
    if (!OPEN_INCIDENT.includes(incident.status)) return { ...(timerId ? { timerId } : {}), incidentId, fixes: [], fresh: true };
    // every timer linked to it: its own (or the panic's slot) and those that joined it
    return { ...(timerId ? { timerId } : {}), incidentId, ...(await this.trail(trailTimersOf(incident))) };
  }

  /**
   * For the escalation: the freshest fix (cache, this replica's buffer, the store's last
   * flushed), stored now with what this replica buffered for the timer. Never throws: with
   * nothing readable the SOS uses the point given on arming.
   */
  async atEscalation(timer: Timer): Promise<StoredFix | null> {
    return (await this.atEscalationMany([timer]))[0] ?? null;
  }

  /** atEscalation for a sweep's group: one cache read (one round trip to Redis) for all of its timers. */
  async atEscalationMany(timers: Timer[]): Promise<(StoredFix | null)[]> {
    if (timers.length === 0) return [];
    const cached = await this.cache.getMany(timers.map((t) => t.id)).catch((err: unknown) => {
      this.cacheFailed(err, 'get');
      return new Map<string, StoredFix>();
    });
    return Promise.all(timers.map((t) => this.escalationFix(t, cached.get(t.id) ?? null)));
  }

  private async escalationFix(timer: Timer, cached: StoredFix | null): Promise<StoredFix | null> {
    try {
      await this.flushTimer(timer.id);
      const best = await this.latestWith(timer.id, cached);
      if (best) await this.store.addFixes([best]);
      return best;
    } catch (err) {
      this.log.warn({ err, timer: timer.id }, 'no live fix could be read for the SOS; using the point given on arming');
      return null;
    }
  }

  /**
   * Wraps a publisher: when a timer ends (safe, cancelled, expired) the fixes this replica
   * buffered for it are flushed at once.
   */
  flushingOnEnd(inner: EventPublisher): EventPublisher {
    return {
      publish: (e: VigilEvent) => {
        inner.publish(e);
        if (e.name !== 'timer.safe' && e.name !== 'timer.cancelled' && e.name !== 'timer.expired') return;
        const timerId = (e.payload.timer as { id?: unknown } | undefined)?.id;
        if (typeof timerId === 'string') void this.flushTimer(timerId).catch(() => undefined);
      },
    };
  }

  /** Flush every buffered fix (the periodic job and shutdown). Never throws; what failed stays buffered. */
  async flushAll(): Promise<number> {
    let n = 0;
    for (const id of [...this.pending.keys()]) n += await this.flushTimer(id).catch(() => 0);
    // forget rate windows nobody used for a minute (and whose last kept fix is older than the interval)
    const now = this.lastNow;
    const hostNow = this.hostMs();
    for (const [user, r] of this.rate)
      if (r.attempts.every((t) => hostNow - t > 60_000) && now - (r.lastKeptAt ?? 0) > this.settings.minIntervalMs) this.rate.delete(user);
    return n;
  }

  /** Store what this replica buffered for one timer; on failure the fixes stay buffered and the error propagates. */
  async flushTimer(timerId: string): Promise<number> {
    const batch = this.pending.get(timerId);
    if (!batch || batch.length === 0) return 0;
    this.pending.delete(timerId);
    try {
      await this.store.addFixes(batch);
      return batch.length;
    } catch (err) {
      this.counters.inc('flush_error');
      this.log.warn({ err, timer: timerId, fixes: batch.length }, 'location flush failed; the fixes stay buffered');
      const again = [...batch, ...(this.pending.get(timerId) ?? [])].slice(-MAX_BUFFERED_PER_TIMER);
      this.pending.set(timerId, again);
      throw err;
    }
  }

  /** How many fixes wait to be flushed here. */
  buffered(): number {
    let n = 0;
    for (const b of this.pending.values()) n += b.length;
    return n;
  }

  /** The open incident of an expired timer: the one it is linked to (its own, or the one it joined), else its own by id. */
  private async openIncidentOf(timer: Timer): Promise<Incident | null> {
    if (timer.status !== 'expired') return null;
    const incident = timer.incidentId ? await this.store.getIncident(timer.incidentId) : await this.store.incidentForTimer(timer.id);
    return incident && OPEN_INCIDENT.includes(incident.status) ? incident : null;
  }

  /** The freshest known fix of a trail: cache (shared), this replica's buffer, the store's last flushed. */
  private async latest(trailId: string): Promise<StoredFix | null> {
    const cached = await this.cache.get(trailId).catch((err: unknown) => this.cacheFailed(err, 'get'));
    return this.latestWith(trailId, cached ?? null);
  }

  /** The freshest of the cached fix (read by the caller), the buffered one and the stored one. */
  private async latestWith(trailId: string, cached: StoredFix | null): Promise<StoredFix | null> {
    const buffered = this.pending.get(trailId)?.at(-1) ?? null;
    const stored = await this.store.lastFix(trailId);
    return fresher(fresher(cached, buffered), stored);
  }

  /**
   * The trail every replica answers alike (docs/location.md): what this replica buffered is
   * stored first, then the newest fix is read from the shared cache, then the stored fixes. A
   * fix stored after the cache read is in the store read that follows, so nothing that moved
   * from the cache to the store meanwhile is missed, and a later read on any replica never
   * shows less. Fixes another replica still buffers (never its newest: that one is cached)
   * appear once it flushes, within LOCATION_FLUSH_SECONDS.
   */
  private async trail(trailIds: string[]): Promise<Pick<Trail, 'fixes' | 'fresh' | 'maxLagMs'>> {
    await Promise.all(trailIds.map((id) => this.flushTimer(id).catch(() => 0)));
    let fresh = true;
    const cached = await this.cache.getMany(trailIds).catch((err: unknown) => {
      fresh = false;
      this.cacheFailed(err, 'get');
      return new Map<string, StoredFix>();
    });
    const stored = (await Promise.all(trailIds.map((id) => this.store.listFixes(id, this.settings.trailLimit)))).flat();
    const byTime = new Map<string, StoredFix>();
    for (const f of [...stored, ...cached.values()]) byTime.set(`${f.timerId}@${f.at.getTime()}`, f);
    const fixes = [...byTime.values()].sort((a, b) => a.at.getTime() - b.at.getTime()).slice(-this.settings.trailLimit);
    return fresh ? { fixes, fresh } : { fixes, fresh, maxLagMs: this.settings.flushMs };
  }

  /** Store one fix now; if the store fails too it is buffered for the next flush. Never throws. */
  private async storeNow(fix: StoredFix): Promise<void> {
    try {
      await this.store.addFixes([fix]);
    } catch (err) {
      this.counters.inc('flush_error');
      this.log.warn({ err, timer: fix.timerId }, 'could not store a fix the cache did not take; it stays buffered');
      this.buffer(fix);
    }
  }

  /**
   * One `moved` text per contact whose SOS went out (or will), once the person is far from where
   * the SOS said; those over a cap are recorded as held (never sent, the reason on the incident).
   */
  private async followUp(incident: Incident, fix: StoredFix, now: Date): Promise<void> {
    if (!movedBeyond(incident.location, fix, this.settings.followUpMeters)) return;
    const { send, held } = await this.smsBudget.movedRecipients(incident);
    if (send.length === 0 && held.length === 0) return;
    const { settings, byId } = await contactTexts(this.store, incident.userId);
    const facts = { personName: incident.displayName, lastSeen: lastSeenAt(fix, now) ?? { point: fix, ageMs: 0 } };
    const body = perLanguage(settings, incident.id, (ctx) => movedMessage(facts, ctx));
    const moved = (d: Delivery, heldAs?: string): NewDelivery =>
      newDelivery(incident.id, d, 'moved', body(byId(d.contactId)), { held: heldAs });
    await this.store.addDeliveries(incident, [...send.map((d) => moved(d)), ...held.map((h) => moved(h.sos, h.lastError))]);
    this.log.info({ incident: incident.id, recipients: send.length, held: held.length }, 'moved follow-up queued');
  }

  private dropped(base: Omit<PostResult, 'kept'>, reason: PostResult['reason']): PostResult {
    this.counters.inc('dropped');
    return { kept: false, reason, ...base };
  }

  private buffer(fix: StoredFix): void {
    const list = this.pending.get(fix.timerId) ?? [];
    list.push(fix);
    if (list.length > MAX_BUFFERED_PER_TIMER) list.shift();
    this.pending.set(fix.timerId, list);
  }

  private rateOf(userId: string): RateState {
    let r = this.rate.get(userId);
    if (!r) {
      r = { attempts: [] };
      this.rate.set(userId, r);
    }
    return r;
  }

  /**
   * The budget of posts per person and minute, charged before anything reads the store: every
   * attempt counts, one for a made-up timer or incident id too, so a flood of fixes costs a map
   * lookup each, never a store read (docs/security.md).
   */
  private admit(userId: string): void {
    const now = this.hostMs();
    const r = this.rateOf(userId);
    r.attempts = r.attempts.filter((t) => now - t < 60_000);
    this.refuseUnless(rateDecision(this.settings, now, r.attempts, undefined));
    r.attempts.push(now);
  }

  /** At most one kept fix per interval, on the store's clock (the one `lastKeptAt` was read on). */
  private checkInterval(userId: string, now: number): void {
    this.lastNow = Math.max(this.lastNow, now);
    this.refuseUnless(rateDecision(this.settings, now, [], this.rateOf(userId).lastKeptAt));
  }

  private refuseUnless(d: ReturnType<typeof rateDecision>): void {
    if (d.ok) return;
    this.counters.inc('rate_limited');
    const seconds = Math.max(1, Math.ceil(d.retryAfterMs / 1000));
    throw RateLimited('rate_limited', `too many location fixes; try again in ${seconds} s`, seconds);
  }

  private cacheFailed(err: unknown, op: string): null {
    this.counters.inc('cache_error');
    this.log.warn({ err: err instanceof Error ? err.message : String(err), op }, 'latest-fix cache unavailable; using the store');
    return null;
  }
}
