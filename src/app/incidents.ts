/** Moderator use cases: read the board, acknowledge, resolve. */
import type { Delivery } from '../domain/delivery.js';
import type { IncidentNote } from '../domain/moderation.js';
import { Conflict, NotFound } from '../domain/errors.js';
import { decideIncident, type Incident, type IncidentCommand, type IncidentStatus } from '../domain/incident.js';
import type { Metrics } from '../metrics.js';
import { incidentEvent, type EventPublisher } from '../realtime/events.js';
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

export class IncidentService {
  constructor(
    private readonly store: Store,
    private readonly events: EventPublisher,
    private readonly metrics: Metrics,
    /** the person's inbox: "a moderator acknowledged" */
    private readonly notifications?: NotificationService,
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

  private async command(id: string, command: IncidentCommand, by: string): Promise<Incident> {
    for (let i = 0; i < 3; i++) {
      const cur = await this.store.getIncident(id);
      if (!cur) throw NotFound('incident_not_found', `no incident ${id}`);
      const d = decideIncident(command, cur.status);
      if (d.kind === 'noop') return cur;
      if (d.kind === 'conflict')
        throw Conflict('incident_wrong_state', `cannot ${command} an incident that is ${cur.status}`, { status: cur.status });
      const moved = await this.store.transitionIncident(id, d.from, d.to, by);
      if (moved) {
        this.events.publish(incidentEvent(moved));
        if (moved.status === 'acknowledged') await this.notifications?.record(acknowledgedNotification(moved, newId('ntf')));
        return moved;
      }
      // someone else moved it between our read and our CAS: decide again on the new state
      this.metrics.casConflicts.inc({ command });
    }
    throw Conflict('incident_busy', 'the incident kept changing; try again');
  }
}
