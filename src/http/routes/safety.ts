/** /v1/sos (the panic button), /v1/incidents (the caller's own incidents) and /v1/me/notifications (the person's inbox). */
import { createHash } from 'node:crypto';
import { Router } from 'express';
import type { NotificationService } from '../../app/notifications.js';
import type { LocationService } from '../../app/location.js';
import type { PanicService } from '../../app/panic.js';
import { postView } from '../../wire/location.js';
import { notificationView, ownIncidentView } from '../../wire/views.js';
import { principal } from '../auth.js';
import { EmptyBody, FixBody, IdParam, NotificationQuery, parse, SosBody, SosIdempotencyKey } from '../validation.js';
import { fixInput } from './location.js';

/** The fingerprint is over the parsed, canonical body (as for arming a timer). */
const fingerprint = (body: unknown) => createHash('sha256').update(JSON.stringify(body)).digest('hex');

export function sosRoutes(panic: PanicService): Router {
  const r = Router();
  r.post('/', async (req, res) => {
    const p = principal(req);
    const body = parse(SosBody, req.body, 'request body');
    const rawKey = req.header('Idempotency-Key');
    const key = rawKey === undefined ? undefined : parse(SosIdempotencyKey, rawKey, 'Idempotency-Key header');
    const canonical = { location: body.location ?? null, locationName: body.locationName ?? null, note: body.note ?? null };
    const { incident, outcome } = await panic.raise(
      { userId: p.userId, displayName: p.name },
      body,
      key ? { key, fingerprint: fingerprint(canonical) } : undefined,
    );
    if (outcome === 'replayed') res.setHeader('Idempotent-Replayed', 'true');
    res.status(outcome === 'created' ? 201 : 200).json({ incident: ownIncidentView(incident), attached: outcome === 'attached' });
  });
  return r;
}

/** The caller's own incidents: "I'm safe" on one, and live fixes for one (a panic with no timer has only this). Mounted at /v1/incidents. */
export function ownIncidentRoutes(panic: PanicService, location?: LocationService): Router {
  const r = Router();
  r.post('/:id/safe', async (req, res) => {
    parse(EmptyBody, req.body, 'request body');
    const p = principal(req);
    const incident = await panic.safe({ userId: p.userId, displayName: p.name }, parse(IdParam, req.params.id, 'incident id'));
    res.json({ incident: ownIncidentView(incident) });
  });
  if (location)
    r.post('/:id/location', async (req, res) => {
      const p = principal(req);
      const body = parse(FixBody, req.body, 'request body');
      const out = await location.postForIncident(
        { userId: p.userId, displayName: p.name },
        parse(IdParam, req.params.id, 'incident id'),
        fixInput(body),
      );
      res.json(postView(out));
    });
  return r;
}

export function notificationRoutes(notifications: NotificationService): Router {
  const r = Router();
  r.get('/', async (req, res) => {
    const q = parse(NotificationQuery, req.query, 'query');
    const page = await notifications.list(principal(req).userId, { unread: q.unread === 'true', cursor: q.cursor, limit: q.limit });
    res.json({ notifications: page.items.map(notificationView), more: page.more, ...(page.cursor ? { cursor: page.cursor } : {}) });
  });
  r.post('/read-all', async (req, res) => {
    parse(EmptyBody, req.body, 'request body');
    res.json({ read: await notifications.readAll(principal(req).userId) });
  });
  r.post('/:id/read', async (req, res) => {
    parse(EmptyBody, req.body, 'request body');
    const n = await notifications.read(principal(req).userId, parse(IdParam, req.params.id, 'notification id'));
    res.json({ notification: notificationView(n) });
  });
  return r;
}
