/** /v1/admin: the moderators' view (role "admin"). */
import { Router } from 'express';
import type { AccessAudit } from '../../app/access-audit.js';
import { encodeCursor } from '../../app/cursor.js';
import type { IncidentService, IncidentWithDeliveries } from '../../app/incidents.js';
import type { TimerService } from '../../app/timers.js';
import { noteView } from '../../wire/moderation-views.js';
import { deliveryView, failedEscalationView, incidentView, timerView } from '../../wire/views.js';
import { principal } from '../auth.js';
import { AdminTimerQuery, EmptyBody, IdParam, IncidentQuery, parse } from '../validation.js';

// moderators call the contacts, so the REST view carries the full number (events mask it)
const fullPhone = (p: string) => p;
export const adminIncidentView = ({ incident, deliveries, notes }: IncidentWithDeliveries) => ({
  ...incidentView(incident),
  deliveries: deliveries.map((d) => deliveryView(d, fullPhone)),
  notes: notes.map(noteView),
});
const view = adminIncidentView;

export function adminRoutes(incidents: IncidentService, timers: TimerService, access: AccessAudit): Router {
  const r = Router();

  r.get('/incidents', async (req, res) => {
    const q = parse(IncidentQuery, req.query, 'query');
    const { items, cursor, more, readAt } = await incidents.list(q);
    res.json({ incidents: items.map(view), cursor: encodeCursor(cursor), more, serverTime: readAt.toISOString() });
  });

  // the card carries the person's contacts and texts: the read is audited (one line per request)
  r.get('/incidents/:id', async (req, res) => {
    const id = parse(IdParam, req.params.id, 'incident id');
    await access.beforeIncidentRead(principal(req).userId, id, 'incident.read');
    res.json({ incident: view(await incidents.get(id)) });
  });

  r.post('/incidents/:id/ack', async (req, res) => {
    parse(EmptyBody, req.body, 'request body');
    const id = parse(IdParam, req.params.id, 'incident id');
    await incidents.acknowledge(id, principal(req).userId);
    res.json({ incident: view(await incidents.get(id)) });
  });

  r.post('/incidents/:id/resolve', async (req, res) => {
    parse(EmptyBody, req.body, 'request body');
    const id = parse(IdParam, req.params.id, 'incident id');
    await incidents.resolve(id, principal(req).userId);
    res.json({ incident: view(await incidents.get(id)) });
  });

  // dead letters: escalations that kept failing and are no longer retried
  r.get('/escalations/failed', async (_req, res) => {
    res.json({ timers: (await timers.failedEscalations()).map(failedEscalationView) });
  });

  r.post('/escalations/:timerId/retry', async (req, res) => {
    parse(EmptyBody, req.body, 'request body');
    const t = await timers.retryEscalation(parse(IdParam, req.params.timerId, 'timer id'), principal(req).userId);
    res.json({ timer: failedEscalationView(t) });
  });

  // support: "is her timer still running?" Audited; before any SOS, only with a stated reason
  r.get('/users/:userId/timers', async (req, res) => {
    const { reason, ...q } = parse(AdminTimerQuery, req.query, 'query');
    const userId = parse(IdParam, req.params.userId, 'user id');
    await access.beforeTimersRead(principal(req).userId, userId, reason);
    const { timers: list, cursor, more, readAt } = await timers.list(userId, q);
    res.json({ timers: list.map((t) => timerView(t)), cursor: encodeCursor(cursor), more, serverTime: readAt.toISOString() });
  });

  return r;
}
