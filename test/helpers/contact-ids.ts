/** A contact id key for tests that put contacts and deliveries into a store themselves. */
import { randomBytes } from 'node:crypto';
import { contactIdKey } from '../../src/domain/contact.js';

/** a fresh random key per test process: no test can depend on its value */
export const TEST_CONTACT_IDS = contactIdKey(randomBytes(32).toString('hex'));

export const contactId = (userId: string, phone: string): string => TEST_CONTACT_IDS.of(userId, phone);
