/** /v1/me/contacts: a person's emergency contacts (replaced as a whole). */
import { Router } from 'express';
import type { ContactIdKey } from '../../domain/contact.js';
import type { Store } from '../../store/port.js';
import { principal } from '../auth.js';
import { ContactsBody, parse } from '../validation.js';

export function contactRoutes(store: Store, ids: ContactIdKey): Router {
  const r = Router();
  r.get('/', async (req, res) => {
    res.json({ contacts: await store.getContacts(principal(req).userId) });
  });
  r.put('/', async (req, res) => {
    const userId = principal(req).userId;
    const { contacts } = parse(ContactsBody, req.body, 'request body');
    const saved = await store.replaceContacts(
      userId,
      contacts.map((c) => ({ id: ids.of(userId, c.phone), name: c.name, phone: c.phone })),
    );
    res.json({ contacts: saved });
  });
  return r;
}
