/**
 * Live location: a person posts fixes for their own timer and reads its trail; moderators
 * read the trail of an open incident (`/v1/admin/incidents/:id/locations`), or of many at
 * once (`/v1/admin/incidents/locations?ids=`: one request for a whole board).
 */
import { Router } from 'express';
import type { AccessAudit } from '../../app/access-audit.js';
import type { FixInput, LocationService, Trail } from '../../app/location.js';
import { fixView, postView, type FixBodyInput } from '../../wire/location.js';
import { principal } from '../auth.js';
import { FixBody, IdParam, parse, TrailsQuery } from '../validation.js';

const trailView = (t: Trail) => ({
  timerId: t.timerId,
  incidentId: t.incidentId,
  fixes: t.fixes.map(fixView),
  fresh: t.fresh,
  ...(t.maxLagMs === undefined ? {} : { maxLagSeconds: Math.ceil(t.maxLagMs / 1000) }),
});

/** Mounted at /v1/timers, next to the timer routes. */
/** A fix as the request body says it, as the location service takes it (a time given as text becomes a Date). */
export function fixInput(body: FixBodyInput): FixInput {
  return { lat: body.lat, lng: body.lng, accuracyM: body.accuracyM, at: body.at === undefined ? undefined : new Date(body.at) };
}

export function locationRoutes(location: LocationService): Router {
  const r = Router();

  r.post('/:id/location', async (req, res) => {
    const p = principal(req);
    const body = parse(FixBody, req.body, 'request body');
    const id = parse(IdParam, req.params.id, 'timer id');
    const out = await location.post({ userId: p.userId, displayName: p.name }, id, fixInput(body));
    res.json(postView(out));
  });

  r.get('/:id/locations', async (req, res) => {
    const trail = await location.ownTrail({ userId: principal(req).userId }, parse(IdParam, req.params.id, 'timer id'));
    res.json(trailView(trail));
  });

  return r;
}

/** Mounted at /v1/admin (moderators only). */
export function adminLocationRoutes(location: LocationService, access: AccessAudit): Router {
  const r = Router();
  // trail reads are audited before the read: one line per request (per incident for many at once)
  // before `/incidents/:id` (admin.ts, mounted after this router) could take `locations` for an id
  r.get('/incidents/locations', async (req, res) => {
    const { ids } = parse(TrailsQuery, req.query, 'query');
    const unique = [...new Set(ids)];
    await access.beforeTrailsRead(principal(req).userId, unique);
    const trails = await location.incidentTrails(unique);
    res.json({ trails: trails.map(trailView) });
  });
  r.get('/incidents/:id/locations', async (req, res) => {
    const id = parse(IdParam, req.params.id, 'incident id');
    await access.beforeIncidentRead(principal(req).userId, id, 'trail.read');
    res.json(trailView(await location.incidentTrail(id)));
  });
  return r;
}
