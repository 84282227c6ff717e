/**
 * Completes the escalation of an expired timer. Every step is idempotent, so the
 * same timer can be escalated again after a crash at any line:
 *   open incident (unique per timer) → add deliveries (unique per key) → publish → mark done.
 * A sweep escalates a claimed batch with `escalateBatch`: the same steps for many timers in
 * one store write (group commit), then the events; if the batch fails, the sweeper falls back
 * to `escalate`, one timer at a time, so one bad timer is counted and dead-lettered alone.
 * The SMS budget decides which contacts get a delivery; the incident and
 * its events go out whatever the caps say, so moderators always see the SOS.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { AllClear } from '../app/all-clear.js';
import { contactTexts } from '../app/contact-texts.js';
import { newId } from '../app/ids.js';
import type { SmsBudget } from '../app/sms-budget.js';
import { sosDeliveries } from '../domain/delivery.js';
import type { ContactSettings } from '../domain/locale.js';
import { lastSeenAt } from '../domain/messages.js';
import { quietDuress, type Incident } from '../domain/incident.js';
import type { Timer } from '../domain/timer.js';
import type { Metrics } from '../metrics.js';
import { incidentJoinedEvent, sosEvent, timerEvent, type EventPublisher } from '../realtime/events.js';
import type { EscalationItem } from '../store/port-batch.js';
import type { Store } from '../store/port.js';
import { noTracing, type Span, type Tracing } from '../telemetry/tracing.js';
import type { StoredFix } from '../domain/location.js';
import { perLanguage, sosMessage } from '../texts/render.js';

export interface EscalationExtras {
  /** the freshest live fix of the timer (never throws; null when none is readable) */
  location?: { atEscalation(timer: Timer): Promise<StoredFix | null>; atEscalationMany(timers: Timer[]): Promise<(StoredFix | null)[]> };
  /** say whom the person was meeting in the SOS text (SOS_INCLUDE_MEETING) */
  includeMeeting?: boolean;
  /**
   * DURESS_TEXT_CONTACTS (default yes): a duress check-in that lost to the sweep takes the
   * expired timer over (app/panic.ts raiseDuress), so the incident this escalation finds may be
   * a duress one; its contacts are texted only when this says so
   */
  duressTextsContacts?: boolean;
}

export class Escalator {
  private readonly allClear: AllClear;

  constructor(
    private readonly store: Store,
    private readonly events: EventPublisher,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    /** shared with the timer service */
    private readonly smsBudget: SmsBudget,
    /** the escalation continues the trace of the request that armed the timer; its deliveries carry it on */
    private readonly tracing: Tracing = noTracing(),
    private readonly extras: EscalationExtras = {},
  ) {
    this.allClear = new AllClear(store, events, smsBudget);
  }

  /**
   * A dead-lettered escalation still reaches moderators if the store lets it: the incident
   * is opened (or found) and `sos.triggered` published, without contacts. Best effort: when
   * opening the incident is what fails, the failed-escalation list and alert remain.
   */
  async openForModerators(timer: Timer, fence: number): Promise<Incident | null> {
    try {
      const { incident } = await this.store.openIncident(timer, fence, newId('inc'));
      this.events.publish(sosEvent(incident));
      return incident;
    } catch (err) {
      this.log.error({ err, timer: timer.id }, 'dead-lettered escalation: the incident could not be opened either');
      return null;
    }
  }

  /** Repair of a false alarm whose all-clear was left pending (the request failed or crashed half-way). */
  async completeAllClear(incident: Incident): Promise<void> {
    const r = await this.allClear.complete(incident);
    this.log.info({ incident: incident.id, allClears: r.created, superseded: r.superseded }, 'all-clear completed by repair');
  }

  /**
   * Escalate a batch with a constant number of store calls: read contacts and existing
   * incidents, apply the SMS budget, then one `escalateBatch` write; events, metrics and a log
   * line per timer after it. Each timer keeps its own `vigil.escalate` span in its arming trace.
   * Throws when the batch fails: nothing of it is lost (every escalation is still pending).
   */
  async escalateBatch(timers: Timer[], fence: number): Promise<void> {
    if (timers.length === 0) return;
    const spans = timers.map((t) =>
      this.tracing.startSpan('vigil.escalate', {
        parent: t.traceparent ?? null,
        attributes: { 'vigil.timer.id': t.id, 'vigil.fence': t.expiredByFence ?? fence, 'vigil.batch.size': timers.length },
      }),
    );
    try {
      await this.escalateBatchTraced(timers, fence, spans);
    } catch (err) {
      for (const span of spans) {
        span.setAttribute('error.type', err instanceof Error ? err.name : typeof err);
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'batch failed' });
      }
      throw err;
    } finally {
      for (const span of spans) span.end();
    }
  }

  private async escalateBatchTraced(timers: Timer[], fence: number, spans: Span[]): Promise<void> {
    const [contactsByUser, settingsByUser, existing] = await Promise.all([
      this.store.contactsOf(timers.map((t) => t.userId)),
      this.store.contactSettingsOf(timers.map((t) => t.userId)),
      this.store.incidentsForTimers(timers.map((t) => t.id)),
    ]);
    // read when the SOS is written: the incident records where the text says the person was
    const [fixes, now] = await Promise.all([
      this.extras.location ? this.extras.location.atEscalationMany(timers) : timers.map(() => null),
      this.store.now(),
    ]);
    const existingOf = new Map(existing.map((i) => [i.timerId, i]));
    const plans = timers.map((t) => {
      const found = existingOf.get(t.id);
      const contacts = found && quietDuress(this.duressTexts(), found.id, false) ? [] : (contactsByUser.get(t.userId) ?? []);
      return { timer: t, incidentId: found?.id ?? newId('inc'), exists: found !== undefined, contacts };
    });
    const picked = await this.smsBudget.sosRecipientsBatch(
      plans.map((p) => ({ incident: { id: p.incidentId, userId: p.timer.userId }, exists: p.exists, contacts: p.contacts })),
    );
    const items: EscalationItem[] = plans.map((p, i) => {
      const fix = fixes[i] ?? null;
      const timer = fix ? { ...p.timer, location: { lat: fix.lat, lng: fix.lng } } : p.timer;
      const body = this.sosBody(p.timer, fix, now, settingsByUser.get(p.timer.userId) ?? {}, p.incidentId);
      const span = spans[i];
      const traceparent = span ? this.tracing.run(span, () => this.tracing.traceparent()) : undefined;
      return {
        timer,
        fence: timer.expiredByFence ?? fence,
        incidentId: p.incidentId,
        // a NewDelivery is a recipient with its body (and `held` for a contact who declined or opted out)
        recipients: sosDeliveries(p.incidentId, picked[i] ?? [], body, traceparent),
        // found only by the write (a duress check-in took the timer over meanwhile): the store drops the recipients
        duressTexts: this.duressTexts(),
      };
    });
    const results = await this.store.escalateBatch(items);
    let marked = 0;
    results.forEach((r, i) => {
      const timer = timers[i] as Timer;
      const { incident, created } = r;
      if (created) this.metrics.escalationLag.observe(Math.max(0, (incident.createdAt.getTime() - timer.expiresAt.getTime()) / 1000));
      this.events.publish(timerEvent('timer.expired', { ...timer, incidentId: incident.id }));
      // a second SOS while one is open joined it: moderators are told, nobody is texted again
      this.events.publish(r.joined ? incidentJoinedEvent(incident, timer.id) : sosEvent(incident));
      if (r.marked) marked++;
      this.log.info(
        {
          timer: timer.id,
          incident: incident.id,
          fence: items[i]?.fence,
          contacts: plans[i]?.contacts.length,
          recipients: items[i]?.recipients.length,
          repaired: !created && !r.joined,
          joined: r.joined,
          lagMs: incident.createdAt.getTime() - timer.expiresAt.getTime(),
          batch: timers.length,
        },
        r.joined ? 'SOS joined the open incident' : 'SOS escalated',
      );
    });
    if (marked > 0) this.metrics.escalated.inc(marked);
  }

  async escalate(timer: Timer, fence: number): Promise<void> {
    await this.tracing.inSpan(
      'vigil.escalate',
      { parent: timer.traceparent ?? null, attributes: { 'vigil.timer.id': timer.id, 'vigil.fence': fence } },
      () => this.escalateTraced(timer, fence),
    );
  }

  private async escalateTraced(timer: Timer, fence: number): Promise<void> {
    // read when the SOS is written: the incident records where the text says the person was
    const fix = (await this.extras.location?.atEscalation(timer)) ?? null;
    const now = await this.store.now();
    const where = fix ? { ...timer, location: { lat: fix.lat, lng: fix.lng } } : timer;
    const { incident, created, joined } = await this.store.openIncident(where, fence, newId('inc'));
    if (created) this.metrics.escalationLag.observe(Math.max(0, (incident.createdAt.getTime() - timer.expiresAt.getTime()) / 1000));
    const { contacts: all, settings } = await contactTexts(this.store, timer.userId);
    const contacts = quietDuress(this.duressTexts(), incident.id, joined) ? [] : await this.smsBudget.sosRecipients(incident, all);
    const body = this.sosBody(timer, fix, now, settings, incident.id);
    await this.store.addDeliveries(incident, sosDeliveries(incident.id, contacts, body, this.tracing.traceparent()));
    this.events.publish(timerEvent('timer.expired', { ...timer, incidentId: incident.id }));
    this.events.publish(joined ? incidentJoinedEvent(incident, timer.id) : sosEvent(incident));
    const marked = await this.store.markEscalated(timer.id, incident.id);
    if (marked) this.metrics.escalated.inc();
    this.log.info(
      {
        timer: timer.id,
        incident: incident.id,
        fence,
        contacts: all.length,
        recipients: contacts.length,
        repaired: !created && !joined,
        joined,
        lagMs: incident.createdAt.getTime() - timer.expiresAt.getTime(),
      },
      joined ? 'SOS joined the open incident' : 'SOS escalated',
    );
  }

  /** DURESS_TEXT_CONTACTS: whether a duress incident that took this timer over texts the contacts (domain/incident.ts quietDuress). */
  private duressTexts(): boolean {
    return this.extras.duressTextsContacts !== false;
  }

  /**
   * The SOS text of `timer` (as armed) in each contact's language, the time in the person's time zone;
   * with a live fix it says where and how long ago the person was last seen.
   */
  private sosBody(timer: Timer, fix: StoredFix | null, now: Date, settings: ContactSettings, incidentId: string) {
    const facts = {
      personName: timer.displayName,
      locationName: timer.locationName,
      location: timer.location,
      lastSeen: lastSeenAt(fix, now),
      meetingName: this.extras.includeMeeting ? timer.meeting?.name : undefined,
      deadline: timer.expiresAt,
    };
    // the zone the person armed the timer in wins over their contact list's
    const zone = timer.timeZone ? { ...settings, timeZone: timer.timeZone } : settings;
    return perLanguage(zone, incidentId, (ctx) => sosMessage(facts, ctx));
  }
}
