/**
 * Every moderator read of a person's data is recorded (docs/privacy.md, "The audit"): their
 * timers, an incident's card (contacts, texts) and trails. The line is written before the read,
 * so a read whose line cannot be written is not served; one line per request (per incident for
 * a read of many trails at once). Always on: mounted with the admin routes whatever else is.
 */
import { Invalid, NotFound } from '../domain/errors.js';
import type { Incident } from '../domain/incident.js';
import { auditId, reasonProblem, type AccessAction, type NewAuditLine } from '../domain/moderation.js';
import type { Store } from '../store/port.js';
import { uuidv7 } from './ids.js';

const readLine = (id: string, actor: string, action: AccessAction, i: Incident): NewAuditLine => ({
  id,
  actor,
  action,
  target: i.id,
  incidentId: i.id,
  person: i.userId,
});

export class AccessAudit {
  constructor(private readonly store: Pick<Store, 'getIncident' | 'openIncidentOf' | 'recordAccess'>) {}

  /**
   * Before a moderator reads a person's timers: without an open incident of theirs (before any
   * SOS) they must say why (`reason`, 400 `reason_required`); the read is recorded, reason and all.
   */
  async beforeTimersRead(actor: string, person: string, reason?: string): Promise<void> {
    if (reason !== undefined) {
      const problem = reasonProblem(reason);
      if (problem) throw Invalid('reason_invalid', problem);
    }
    const open = await this.store.openIncidentOf(person);
    if (!open && reason === undefined)
      throw Invalid(
        'reason_required',
        'this person has no open incident: looking at their timers needs a `reason`, which is recorded in the audit',
      );
    await this.store.recordAccess([
      {
        id: auditId.read(uuidv7()),
        actor,
        action: 'timers.read',
        target: person,
        person,
        ...(open ? { incidentId: open.id } : {}),
        ...(reason === undefined ? {} : { reason }),
      },
    ]);
  }

  /** Before a moderator reads an incident's card (its contacts and texts) or trail: one line per request. */
  async beforeIncidentRead(actor: string, incidentId: string, action: 'incident.read' | 'trail.read'): Promise<void> {
    const i = await this.store.getIncident(incidentId);
    if (!i) throw NotFound('incident_not_found', `no incident ${incidentId}`);
    await this.store.recordAccess([readLine(auditId.read(uuidv7()), actor, action, i)]);
  }

  /** Before a moderator reads the trails of many incidents at once: one line per incident read, one write. */
  async beforeTrailsRead(actor: string, incidentIds: readonly string[]): Promise<void> {
    const found = (await Promise.all(incidentIds.map((id) => this.store.getIncident(id)))).filter((i): i is Incident => i !== null);
    if (found.length === 0) return;
    const request = uuidv7();
    await this.store.recordAccess(found.map((i) => readLine(auditId.read(`${request}:${i.id}`), actor, 'trail.read', i)));
  }
}
