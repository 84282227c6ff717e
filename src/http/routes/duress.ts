/** /v1/me/duress: the caller's duress PIN (docs/security.md, "Duress code"). Never read back. */
import { Router } from 'express';
import type { DuressPins } from '../../app/duress.js';
import { principal } from '../auth.js';
import { DuressBody, EmptyBody, parse } from '../validation.js';

/** Mounted at /v1/me/duress. */
export function duressRoutes(pins: DuressPins): Router {
  const r = Router();
  r.put('/', async (req, res) => {
    const { pin } = parse(DuressBody, req.body, 'request body');
    await pins.set(principal(req).userId, pin);
    res.json({ duress: { set: true } });
  });
  r.delete('/', async (req, res) => {
    parse(EmptyBody, req.body ?? {}, 'request body');
    await pins.remove(principal(req).userId);
    res.json({ duress: { set: false } });
  });
  return r;
}
