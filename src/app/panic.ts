/**
 * The panic button: `POST /v1/sos`. The store decides atomically what the press becomes
 * (store/port-safety.ts: a new incident, the person's live timer taken over, or attached to
 * the open incident); this completes it: SOS texts (the same budget and keys as a timer SOS,
 * so a contact is never texted twice for one incident) and the events.
 *
 * A live timer taken over by the panic is expired with its escalation pending, so if this
 * request dies half-way the sweep completes it like any expired timer (invariant 4); it is
 * marked done here once the texts are queued.
 *
 * Where: the place sent with the press; else the freshest live fix of the person's live timer
 * (cache, buffer, store, as the timer path reads it: "Last seen 2 min ago at …"); else the
 * point the timer was armed with. The note is kept on the incident (moderators read it; a
 * press that attaches adds its own) and the SOS text carries the first one, also when the
 * sweep completes the texts after a crash.
 */
import { sosDeliveries } from '../domain/delivery.js';
import { contactTexts } from './contact-texts.js';
import { DomainError, NotFound } from '../domain/errors.js';
import { DURESS_ID_PREFIX, isDuress, type Incident } from '../domain/incident.js';
import { lastSeenAt } from '../domain/messages.js';
import { panicMessage, perLanguage } from '../texts/render.js';
import type { StoredFix } from '../domain/location.js';
import { isLive, type GeoPoint, type Timer } from '../domain/timer.js';
import type { Metrics } from '../metrics.js';
import { incidentPressEvent, sosEvent, timerEvent, type EventPublisher } from '../realtime/events.js';
import type { PanicKey } from '../store/port-safety.js';
import type { Store } from '../store/port.js';
import { noTracing, type Tracing } from '../telemetry/tracing.js';
import { AllClear } from './all-clear.js';
import type { Caller } from './timers.js';
import { newId } from './ids.js';
import type { SmsBudget } from './sms-budget.js';

export interface PanicInput {
  location?: GeoPoint;
  locationName?: string;
  /** a short line from the person, added to the SOS text */
  note?: string;
}

export type PanicOutcome = 'created' | 'attached' | 'replayed';

/** What a failed step of the crash repair was about. */
export interface RepairSubject {
  incident?: string;
  timer?: string;
}

/** The live location service, as the panic uses it (app/location.ts). */
export interface PanicLocation {
  /** the freshest fix of a live timer, stored now; null when none is readable (never throws) */
  atEscalation(timer: Timer): Promise<StoredFix | null>;
}

/** What the press said: its note, and the live fix used for its place (when the press sent none). */
interface Said {
  note?: string;
  fix?: StoredFix;
}

const idempotencyMismatch = () =>
  new DomainError('idempotency_mismatch', 'idempotency_key_reused', 'this Idempotency-Key was used with a different SOS request');

export class PanicService {
  constructor(
    private readonly store: Store,
    private readonly events: EventPublisher,
    private readonly metrics: Metrics,
    private readonly smsBudget: SmsBudget,
    private readonly tracing: Tracing = noTracing(),
    private readonly extras: { location?: PanicLocation; duressTextsContacts?: boolean } = {},
  ) {
    this.allClear = new AllClear(store, events, smsBudget, () => metrics.casConflicts.inc({ command: 'false_alarm' }));
  }

  private readonly allClear: AllClear;

  /**
   * "I'm safe" on one of the caller's own incidents (a panic, or any SOS): the same as "I'm safe"
   * on its timer: a false alarm, the all-clear to each contact who was texted (after their SOS),
   * unsent SOS texts superseded; after a moderator's resolve that texted nobody, the all-clear
   * still goes. Repeats answer the incident as it is. Someone else's incident is not found.
   */
  async safe(caller: Caller, incidentId: string): Promise<Incident> {
    const incident = await this.store.getIncident(incidentId);
    if (!incident || incident.userId !== caller.userId) throw NotFound('incident_not_found', `no incident ${incidentId} for this user`);
    return this.allClear.personSafe(incident, caller, this.tracing.traceparent());
  }

  async raise(caller: Caller, input: PanicInput, idem?: PanicKey): Promise<{ incident: Incident; outcome: PanicOutcome }> {
    const fix = input.location || input.locationName ? null : await this.liveFix(caller.userId);
    const note = input.note?.trim() ? input.note.trim() : undefined;
    const r = await this.store.raisePanic(
      {
        incidentId: newId('inc'),
        userId: caller.userId,
        displayName: caller.displayName,
        locationName: input.locationName,
        location: input.location ?? (fix ? { lat: fix.lat, lng: fix.lng } : undefined),
        ...(note === undefined ? {} : { note }),
      },
      idem,
    );
    const said: Said = { note, ...(fix ? { fix } : {}) };
    switch (r.kind) {
      case 'idempotency_mismatch':
        throw idempotencyMismatch();
      case 'replayed':
        // a retry after a failure half-way completes the texts (keyed per contact: nobody gets two)
        if (r.incident.panicTexts === 'pending') await this.complete(r.incident, said);
        return { incident: r.incident, outcome: 'replayed' };
      case 'attached':
        if (r.timer) this.events.publish(timerEvent('timer.expired', r.timer));
        // what the press changed on the open incident (a source, a linked timer, a note) reaches moderators live
        if (r.sourceAdded || r.timer || note !== undefined) this.events.publish(incidentPressEvent(r.incident));
        return { incident: r.incident, outcome: 'attached' };
      case 'created':
        if (r.timer) {
          await this.text(r.incident, said);
          await this.completeTimer(r.timer, r.incident);
          this.events.publish(sosEvent(r.incident));
        } else await this.complete(r.incident, said);
        this.metrics.escalated.inc();
        return { incident: r.incident, outcome: 'created' };
    }
  }

  /**
   * The silent SOS of a check-in or cancel sent with the duress PIN (app/duress.ts), after the
   * timer `from` was resolved as asked (or found expired). One open SOS per person holds: the
   * store attaches it to the person's open incident (which becomes a duress incident) or takes
   * over their just-expired timer, else opens one of its own. Moderators are paged at once
   * (`sos.triggered`, to moderators only: events of a duress incident never reach the person's
   * sockets); the contacts are texted unless DURESS_TEXT_CONTACTS is false.
   * When `from` still owes the SOS (its resolving CAS marked it `duressPending`), the mark is
   * cleared once the incident is open: what follows (texts, events) has its own outbox (a panic
   * incident's `panicTexts`, a taken-over timer's escalation). Raised twice (the request and the
   * sweep's repair at once), the second joins the first's open incident quietly (invariant 3).
   */
  async raiseDuress(caller: Caller, from: Timer): Promise<void> {
    const r = await this.store.raisePanic({
      incidentId: newId(DURESS_ID_PREFIX),
      userId: caller.userId,
      displayName: caller.displayName ?? from.displayName,
      locationName: from.locationName,
      location: from.location,
      source: 'duress',
    });
    if (from.duressPending) await this.store.markDuressRaised(from.id);
    if (r.kind === 'attached') {
      if (r.sourceAdded) this.events.publish(incidentPressEvent(r.incident));
      return;
    }
    if (r.kind !== 'created') return;
    if (r.timer) {
      // the sweep had expired the timer: its escalation completes here, as a duress incident
      if (this.textsContacts(r.incident)) await this.text(r.incident, {});
      await this.store.markEscalated(r.timer.id, r.incident.id);
      this.events.publish(sosEvent(r.incident));
    } else await this.complete(r.incident, {});
    this.metrics.escalated.inc();
  }

  /** A duress incident texts the contacts only when DURESS_TEXT_CONTACTS says so (default yes). */
  private textsContacts(incident: Incident): boolean {
    return !isDuress(incident) || this.extras.duressTextsContacts !== false;
  }

  /**
   * Crash repair, run by the sweep: the silent SOS of duress check-ins whose request died after
   * the check-in (`duressPending`), then panic incidents whose texts were left pending (the
   * request died between opening the incident and queueing the texts; a duress incident just
   * opened here included). Never throws: each failure, reading the pending ones included (no id
   * then), goes to `onError`; how many it completed.
   */
  async repair(limit: number, onError: (err: unknown, about?: RepairSubject) => void): Promise<number> {
    let done = await this.repairDuress(limit, onError);
    let pending: Incident[];
    try {
      pending = await this.store.pendingPanicTexts(limit);
    } catch (err) {
      onError(err);
      return done;
    }
    for (const incident of pending) {
      try {
        await this.complete(incident, {});
        done++;
      } catch (err) {
        onError(err, { incident: incident.id });
      }
    }
    return done;
  }

  /** The owed duress SOS of check-ins whose request died after the check-in. */
  private async repairDuress(limit: number, onError: (err: unknown, about?: RepairSubject) => void): Promise<number> {
    let owed: Timer[];
    try {
      owed = await this.store.pendingDuress(limit);
    } catch (err) {
      onError(err);
      return 0;
    }
    let done = 0;
    for (const timer of owed) {
      try {
        await this.raiseDuress({ userId: timer.userId }, timer);
        done++;
      } catch (err) {
        onError(err, { timer: timer.id });
      }
    }
    return done;
  }

  /** The freshest fix of the person's live timer (the newest timer is the live one, if any is). Never throws. */
  private async liveFix(userId: string): Promise<StoredFix | null> {
    if (!this.extras.location) return null;
    const [newest] = await this.store.listTimers(userId, { limit: 1 }).catch(() => []);
    return newest && isLive(newest.status) ? this.extras.location.atEscalation(newest) : null;
  }

  /** A panic incident of its own: texts (unless it is already closed), `sos.triggered`, then the outbox is done. */
  private async complete(incident: Incident, said: Said): Promise<void> {
    if ((incident.status === 'active' || incident.status === 'acknowledged') && this.textsContacts(incident))
      await this.text(incident, said);
    this.events.publish(sosEvent(incident));
    await this.store.markPanicTexted(incident.id);
  }

  private async text(incident: Incident, said: Said): Promise<void> {
    const { contacts: all, settings } = await contactTexts(this.store, incident.userId);
    const contacts = await this.smsBudget.sosRecipients(incident, all);
    const now = said.fix ? await this.store.now() : undefined;
    const facts = {
      personName: incident.displayName,
      locationName: incident.locationName,
      location: incident.location,
      lastSeen: lastSeenAt(said.fix, now),
      raisedAt: incident.createdAt,
      // the press's own, else the first one kept (a repair after a crash has only the incident)
      note: said.note ?? incident.panicNotes?.[0]?.text,
    };
    const body = perLanguage(settings, incident.id, (ctx) => panicMessage(facts, ctx));
    await this.store.addDeliveries(incident, sosDeliveries(incident.id, contacts, body, this.tracing.traceparent()));
  }

  /** The timer the panic took over: its escalation is this incident, done once the texts are queued. */
  private async completeTimer(timer: Timer, incident: Incident): Promise<void> {
    this.events.publish(timerEvent('timer.expired', { ...timer, incidentId: incident.id }));
    await this.store.markEscalated(timer.id, incident.id);
  }
}
