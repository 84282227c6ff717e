/** /v1/me/contacts: a person's emergency contacts and the defaults of their texts (replaced as a whole). */
import { Router } from 'express';
import type { Contact, ContactIdKey } from '../../domain/contact.js';
import { Invalid } from '../../domain/errors.js';
import { isLanguage, isTimeZone, LANGUAGES, type ContactSettings, type Language } from '../../domain/locale.js';
import type { Store } from '../../store/port.js';
import { principal } from '../auth.js';
import { ContactsBody, parse } from '../validation.js';

function language(value: string, at: string): Language {
  if (isLanguage(value)) return value;
  throw Invalid('unsupported_language', `${at}: Vigil has no texts in this language`, { supported: [...LANGUAGES] });
}

const list = (contacts: Contact[], settings: ContactSettings) => ({ contacts, ...settings });

export function contactRoutes(store: Store, ids: ContactIdKey): Router {
  const r = Router();
  r.get('/', async (req, res) => {
    const userId = principal(req).userId;
    const [contacts, settings] = await Promise.all([store.getContacts(userId), store.getContactSettings(userId)]);
    res.json(list(contacts, settings));
  });
  r.put('/', async (req, res) => {
    const userId = principal(req).userId;
    const body = parse(ContactsBody, req.body, 'request body');
    if (body.timeZone !== undefined && !isTimeZone(body.timeZone))
      throw Invalid('unknown_time_zone', 'timeZone: not an IANA time zone name (like Europe/Madrid)');
    const settings: ContactSettings = {
      ...(body.language === undefined ? {} : { language: language(body.language, 'language') }),
      ...(body.timeZone === undefined ? {} : { timeZone: body.timeZone }),
    };
    const contacts = body.contacts.map((c, i) => ({
      id: ids.of(userId, c.phone),
      name: c.name,
      phone: c.phone,
      ...(c.language === undefined ? {} : { language: language(c.language, `contacts[${i}].language`) }),
    }));
    const saved = await store.replaceContacts(userId, contacts, settings);
    res.json(list(saved, settings));
  });
  return r;
}
