/**
 * A person's data is theirs (docs/privacy.md, "Your data"): `GET /v1/me/export` answers
 * everything Vigil holds about the caller; `DELETE /v1/me` erases it (409 while an SOS of
 * theirs is open or a timer live: nothing is erased).
 */
import { Router } from 'express';
import type { PersonalDataService } from '../../app/personal-data.js';
import { fixView } from '../../wire/location.js';
import { notificationView, ownIncidentView, timerView } from '../../wire/views.js';
import { principal } from '../auth.js';
import { EmptyBody, parse } from '../validation.js';

/** Mounted at /v1/me. */
export function personalDataRoutes(personal: PersonalDataService): Router {
  const r = Router();

  r.get('/export', async (req, res) => {
    const { userId } = principal(req);
    const d = await personal.export(userId);
    res.json({
      userId,
      exportedAt: new Date().toISOString(),
      timers: d.timers.map((t) => timerView(t)),
      fixes: d.fixes.map((f) => ({ timerId: f.timerId, ...fixView(f) })),
      contacts: d.contacts.map((c) => ({ id: c.id, name: c.name, phone: c.phone })),
      contactSettings: d.contactSettings,
      duressPinSet: d.duressPinSet,
      notifications: d.notifications.map(notificationView),
      incidents: d.incidents.map((i) => ownIncidentView(i)),
      idempotencyRecords: d.idempotencyRecords,
    });
  });

  r.delete('/', async (req, res) => {
    parse(EmptyBody, req.body ?? {}, 'request body');
    const { counts } = await personal.erase(principal(req).userId);
    res.json({ erased: counts });
  });

  return r;
}
