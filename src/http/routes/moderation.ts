/**
 * /v1/admin moderator actions on texts: resend, cancel pending, notes, and the audit of them.
 * Mounted behind adminOnly next to ./admin.ts. Each action is audited by the store in the
 * same write; the owner sees delivery changes but never notes or who acted.
 */
import { Router } from 'express';
import type { IncidentService } from '../../app/incidents.js';
import type { ModerationService } from '../../app/moderation.js';
import { auditView, noteView } from '../../wire/moderation-views.js';
import { deliveryView } from '../../wire/views.js';
import { principal } from '../auth.js';
import { AuditQuery, encodeAuditCursor, NoteBody } from '../moderation-schemas.js';
import { EmptyBody, IdempotencyKey, IdParam, parse } from '../validation.js';
import { adminIncidentView } from './admin.js';

const AUDIT_PAGE = 50;
// moderators call the contacts, so the REST view carries the full number (events mask it)
const fullPhone = (p: string) => p;

export function moderationRoutes(moderation: ModerationService, incidents: IncidentService): Router {
  const r = Router();

  r.post('/deliveries/:key/resend', async (req, res) => {
    parse(EmptyBody, req.body, 'request body');
    const key = parse(IdParam, req.params.key, 'delivery key');
    const { delivery } = await moderation.resend(key, principal(req).userId);
    res.json({ delivery: deliveryView(delivery, fullPhone) });
  });

  r.post('/incidents/:id/deliveries/cancel', async (req, res) => {
    parse(EmptyBody, req.body, 'request body');
    const id = parse(IdParam, req.params.id, 'incident id');
    const cancelled = await moderation.cancelPending(id, principal(req).userId);
    res.json({ incident: adminIncidentView(await incidents.get(id)), cancelled: cancelled.map((d) => d.key) });
  });

  r.post('/incidents/:id/notes', async (req, res) => {
    const { text } = parse(NoteBody, req.body, 'request body');
    const id = parse(IdParam, req.params.id, 'incident id');
    const rawKey = req.header('Idempotency-Key');
    const key = rawKey === undefined ? undefined : parse(IdempotencyKey, rawKey, 'Idempotency-Key header');
    const { note, created } = await moderation.addNote(id, principal(req).userId, text, key);
    if (!created) res.setHeader('Idempotent-Replayed', 'true');
    res.status(created ? 201 : 200).json({ note: noteView(note) });
  });

  r.get('/audit', async (req, res) => {
    const q = parse(AuditQuery, req.query, 'query');
    const limit = q.limit ?? AUDIT_PAGE;
    const filter = {
      ...(q.actor === undefined ? {} : { actor: q.actor }),
      ...(q.person === undefined ? {} : { person: q.person }),
      ...(q.incident === undefined ? {} : { incidentId: q.incident }),
    };
    const lines = await moderation.audit({ before: q.cursor, limit, filter });
    const last = lines[lines.length - 1];
    const more = lines.length === limit;
    res.json({ audit: lines.map(auditView), more, ...(more && last ? { cursor: encodeAuditCursor(last) } : {}) });
  });

  return r;
}
