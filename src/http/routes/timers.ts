/** /v1/timers: a person's own timers. */
import { createHash } from 'node:crypto';
import { Router } from 'express';
import type { TimerService } from '../../app/timers.js';
import { incidentView, timerView } from '../../wire/views.js';
import { principal } from '../auth.js';
import { ArmBody, EmptyBody, ExtendBody, IdempotencyKey, IdParam, parse, TimerQuery } from '../validation.js';

/** The same key with the same body replays; the fingerprint is over the parsed, canonical body. */
const fingerprint = (body: unknown) => createHash('sha256').update(JSON.stringify(body)).digest('hex');

export function timerRoutes(timers: TimerService): Router {
  const r = Router();

  r.post('/', async (req, res) => {
    const p = principal(req);
    const body = parse(ArmBody, req.body, 'request body');
    const rawKey = req.header('Idempotency-Key');
    const key = rawKey === undefined ? undefined : parse(IdempotencyKey, rawKey, 'Idempotency-Key header');
    const canonical = { durationSeconds: body.durationSeconds, locationName: body.locationName ?? null, location: body.location ?? null };
    const { timer, replayed } = await timers.arm({ userId: p.userId, displayName: p.name }, body, key ? { key, fingerprint: fingerprint(canonical) } : undefined);
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.status(replayed ? 200 : 201).location(`/v1/timers/${timer.id}`).json({ timer: timerView(timer) });
  });

  r.get('/', async (req, res) => {
    const q = parse(TimerQuery, req.query, 'query');
    const { timers: list, cursor, more } = await timers.list(principal(req).userId, q);
    res.json({ timers: list.map(timerView), cursor: cursor.toISOString(), more });
  });

  r.get('/:id', async (req, res) => {
    const t = await timers.get({ userId: principal(req).userId }, parse(IdParam, req.params.id, 'timer id'));
    res.json({ timer: timerView(t) });
  });

  r.post('/:id/extend', async (req, res) => {
    const p = principal(req);
    const { seconds } = parse(ExtendBody, req.body, 'request body');
    const { timer } = await timers.extend({ userId: p.userId, displayName: p.name }, parse(IdParam, req.params.id, 'timer id'), seconds);
    res.json({ timer: timerView(timer) });
  });

  r.post('/:id/safe', async (req, res) => {
    const p = principal(req);
    parse(EmptyBody, req.body, 'request body');
    const { timer, incident } = await timers.checkIn({ userId: p.userId, displayName: p.name }, parse(IdParam, req.params.id, 'timer id'));
    res.json(incident ? { timer: timerView(timer), incident: incidentView(incident) } : { timer: timerView(timer) });
  });

  r.post('/:id/cancel', async (req, res) => {
    const p = principal(req);
    parse(EmptyBody, req.body, 'request body');
    const { timer } = await timers.cancel({ userId: p.userId, displayName: p.name }, parse(IdParam, req.params.id, 'timer id'));
    res.json({ timer: timerView(timer) });
  });

  return r;
}
