/** Moderator use cases: read the board, acknowledge, resolve. */
import type { Delivery } from '../domain/delivery.js';
import type { IncidentNote } from '../domain/moderation.js';
import { Conflict, NotFound } from '../domain/errors.js';
import { decideIncident, isDuress, type Incident, type IncidentCommand, type IncidentStatus } from '../domain/incident.js';
import type { Metrics } from '../metrics.js';
import { maskPhone } from '../domain/messages.js';
import { deliveryEvent, incidentEvent, type EventPublisher } from '../realtime/events.js';
import type { AllClear } from './all-clear.js';
import type { Store } from '../store/port.js';
import { nextCursor, type ChangePosition } from './cursor.js';
import { acknowledgedNotification } from '../domain/notification.js';
import { newId } from './ids.js';
import type { NotificationService } from './notifications.js';

export interface IncidentWithDeliveries {
  incident: Incident;
  deliveries: Delivery[];
  /** moderator notes, oldest first (moderators only) */
  notes: IncidentNote[];
}

export interface ResolveSettings {
  /** how the SOS ends for the contacts (app/all-clear.ts) */
  allClear: AllClear;
  /** a resolve sends each contact who was texted one closing text (RESOLVE_NOTIFY_CONTACTS) */
  notifyContacts: boolean;
}

export class IncidentService {
  constructor(
    private readonly store: Store,
    private readonly events: EventPublisher,
    private readonly metrics: Metrics,
    /** the person's inbox: "a moderator acknowledged" */
    private readonly notifications?: NotificationService,
    /** what a resolve does to the texts; without it, only the status changes */
    private readonly ending?: ResolveSettings,
  ) {}

  /** Incidents with their deliveries; `cursor` works as in TimerService.list. */
  async list(filter: {
    status?: IncidentStatus;
    since?: ChangePosition;
    limit?: number;
  }): Promise<{ items: IncidentWithDeliveries[]; cursor: ChangePosition; more: boolean; readAt: Date }> {
    const readAt = await this.store.now();
    const incidents = await this.store.listIncidents({
      status: filter.status,
      since: filter.since?.since,
      sinceId: filter.since?.sinceId,
      limit: filter.limit,
    });
    return { items: await this.withDeliveries(incidents), readAt, ...nextCursor(incidents, filter, readAt, this.store.changeLagMs()) };
  }

  private async withDeliveries(incidents: Incident[]): Promise<IncidentWithDeliveries[]> {
    const ids = incidents.map((i) => i.id);
    const [deliveries, notes] = await Promise.all([this.store.deliveriesFor(ids), this.store.notesFor(ids)]);
    const by = new Map<string, Delivery[]>();
    for (const d of deliveries) by.set(d.incidentId, [...(by.get(d.incidentId) ?? []), d]);
    const notesBy = new Map<string, IncidentNote[]>();
    for (const n of notes) notesBy.set(n.incidentId, [...(notesBy.get(n.incidentId) ?? []), n]);
    return incidents.map((incident) => ({ incident, deliveries: by.get(incident.id) ?? [], notes: notesBy.get(incident.id) ?? [] }));
  }

  async get(id: string): Promise<IncidentWithDeliveries> {
    const incident = await this.store.getIncident(id);
    if (!incident) throw NotFound('incident_not_found', `no incident ${id}`);
    const [deliveries, notes] = await Promise.all([this.store.deliveriesFor([id]), this.store.notesFor([id])]);
    return { incident, deliveries, notes };
  }

  acknowledge(id: string, by: string): Promise<Incident> {
    return this.command(id, 'acknowledge', by);
  }

  resolve(id: string, by: string): Promise<Incident> {
    return this.command(id, 'resolve', by);
  }

  /**
   * After a resolve nothing alarming goes out: unsent SOS texts and follow-ups are superseded,
   * and, with closing texts on, each contact whose SOS went out or may have gets one, after it.
   * The closing texts' outbox was recorded by the CAS (`allClear: 'pending'`): if this fails
   * half-way the sweep completes it; without them, the dispatcher supersedes what it claims.
   */
  private async ended(incident: Incident): Promise<void> {
    if (!this.ending) return;
    if (incident.allClear === 'pending') await this.ending.allClear.complete(incident, undefined, undefined, 'closed');
    else for (const d of await this.store.supersedePendingSos(incident.id)) this.events.publish(deliveryEvent(d, maskPhone));
  }

  private async command(id: string, command: IncidentCommand, by: string): Promise<Incident> {
    for (let i = 0; i < 3; i++) {
      const cur = await this.store.getIncident(id);
      if (!cur) throw NotFound('incident_not_found', `no incident ${id}`);
      const d = decideIncident(command, cur.status);
      if (d.kind === 'noop') {
        // a repeat writes the first one's audit line again (one lost between its CAS and it, MongoDB)
        await this.store.transitionIncident(id, [], cur.status, by, { audit: true });
        // a repeated resolve finishes closing texts a failed first one left owed
        if (command === 'resolve' && cur.allClear === 'pending') await this.ended(cur);
        return cur;
      }
      if (d.kind === 'conflict')
        throw Conflict('incident_wrong_state', `cannot ${command} an incident that is ${cur.status}`, { status: cur.status });
      const closing = d.to === 'resolved' && this.ending?.notifyContacts === true;
      // a moderator's command: audited in the same write
      const moved = await this.store.transitionIncident(id, d.from, d.to, by, { audit: true, ...(closing ? { closingTexts: true } : {}) });
      if (moved) {
        this.events.publish(incidentEvent(moved));
        // a duress incident is silent: the person's inbox never hears of it
        if (moved.status === 'acknowledged' && !isDuress(moved))
          await this.notifications?.record(acknowledgedNotification(moved, newId('ntf')));
        if (moved.status === 'resolved') await this.ended(moved);
        return moved;
      }
      // someone else moved it between our read and our CAS: decide again on the new state
      this.metrics.casConflicts.inc({ command });
    }
    throw Conflict('incident_busy', 'the incident kept changing; try again');
  }
}
