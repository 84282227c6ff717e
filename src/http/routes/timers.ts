/** /v1/timers: a person's own timers. */
import { createHash } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import type { DuressCheckIns } from '../../app/duress.js';
import type { TimerService } from '../../app/timers.js';
import { Invalid } from '../../domain/errors.js';
import { isTimeZone } from '../../domain/locale.js';
import { ownIncidentView, timerView } from '../../wire/views.js';
import { principal } from '../auth.js';
import { encodeCursor } from '../../app/cursor.js';
import type { IdempotencyClaim } from '../../store/port.js';
import { ArmBody, CheckInBody, ExtendBody, IdempotencyKey, IdParam, parse, TimerQuery } from '../validation.js';

/** The same key with the same body replays; the fingerprint is over the parsed, canonical body. */
const fingerprint = (body: unknown) => createHash('sha256').update(JSON.stringify(body)).digest('hex');

/**
 * The Idempotency-Key of a timer command; its fingerprint covers the command and the timer
 * too, so the key reused on another command or timer is refused like another body.
 */
function commandKey(req: Request, command: 'extend' | 'safe' | 'cancel', timerId: string, body: object): IdempotencyClaim | undefined {
  const rawKey = req.header('Idempotency-Key');
  if (rawKey === undefined) return undefined;
  return { key: parse(IdempotencyKey, rawKey, 'Idempotency-Key header'), fingerprint: fingerprint({ command, timerId, body }) };
}

const replayedHeader = (res: Response, replayed: boolean | undefined) => {
  if (replayed) res.setHeader('Idempotent-Replayed', 'true');
};

export function timerRoutes(timers: TimerService, duress?: DuressCheckIns): Router {
  const r = Router();
  /**
   * "I'm safe" or cancel. The PIN is left out of the key's fingerprint: a duress check-in and a
   * genuine one are the same request as far as the key (and anyone reading its answer) can tell.
   */
  const resolve = (req: Request, command: 'safe' | 'cancel') => {
    const p = principal(req);
    const { pin } = parse(CheckInBody, req.body ?? {}, 'request body');
    const id = parse(IdParam, req.params.id, 'timer id');
    const caller = { userId: p.userId, displayName: p.name };
    const key = commandKey(req, command, id, {});
    if (duress) return duress.resolve(caller, id, command, pin, key);
    return command === 'safe' ? timers.checkIn(caller, id, key) : timers.cancel(caller, id, key);
  };

  r.post('/', async (req, res) => {
    const p = principal(req);
    const body = parse(ArmBody, req.body, 'request body');
    if (body.timeZone !== undefined && !isTimeZone(body.timeZone))
      throw Invalid('unknown_time_zone', 'timeZone: not an IANA time zone name (like America/Bogota)');
    const rawKey = req.header('Idempotency-Key');
    const key = rawKey === undefined ? undefined : parse(IdempotencyKey, rawKey, 'Idempotency-Key header');
    const canonical = {
      durationSeconds: body.durationSeconds,
      locationName: body.locationName ?? null,
      location: body.location ?? null,
      // only when given, so keys recorded before meetings existed still match their replays
      ...(body.meeting ? { meeting: body.meeting } : {}),
      ...(body.timeZone ? { timeZone: body.timeZone } : {}),
    };
    const { timer, replayed } = await timers.arm(
      { userId: p.userId, displayName: p.name },
      body,
      key ? { key, fingerprint: fingerprint(canonical) } : undefined,
    );
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    res
      .status(replayed ? 200 : 201)
      .location(`/v1/timers/${timer.id}`)
      .json({ timer: timerView(timer) });
  });

  r.get('/', async (req, res) => {
    const q = parse(TimerQuery, req.query, 'query');
    const { timers: list, cursor, more, readAt } = await timers.list(principal(req).userId, q);
    res.json({ timers: list.map((t) => timerView(t)), cursor: encodeCursor(cursor), more, serverTime: readAt.toISOString() });
  });

  r.get('/:id', async (req, res) => {
    const t = await timers.get({ userId: principal(req).userId }, parse(IdParam, req.params.id, 'timer id'));
    res.json({ timer: timerView(t) });
  });

  r.post('/:id/extend', async (req, res) => {
    const p = principal(req);
    const { seconds } = parse(ExtendBody, req.body, 'request body');
    const id = parse(IdParam, req.params.id, 'timer id');
    const { timer, replayed } = await timers.extend(
      { userId: p.userId, displayName: p.name },
      id,
      seconds,
      commandKey(req, 'extend', id, { seconds }),
    );
    replayedHeader(res, replayed);
    res.json({ timer: timerView(timer) });
  });

  r.post('/:id/safe', async (req, res) => {
    const { timer, incident, replayed } = await resolve(req, 'safe');
    replayedHeader(res, replayed);
    res.json(incident ? { timer: timerView(timer), incident: ownIncidentView(incident) } : { timer: timerView(timer) });
  });

  r.post('/:id/cancel', async (req, res) => {
    const { timer, replayed } = await resolve(req, 'cancel');
    replayedHeader(res, replayed);
    res.json({ timer: timerView(timer) });
  });

  return r;
}
