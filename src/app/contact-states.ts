/**
 * Where a person's contacts stand, as the carriers and the contacts themselves say (issue 37): a
 * number that refuses our texts becomes `opted_out` (no SOS goes to it: domain/contact.ts
 * `sosAudience`), and the person gets an inbox entry to fix or replace the contact.
 */
import type { Delivery } from '../domain/delivery.js';
import { contactUnreachableNotification, type Unreachable } from '../domain/notification.js';
import type { Store } from '../store/port.js';
import { newId } from './ids.js';
import type { NotificationService } from './notifications.js';

export class ContactStates {
  constructor(
    private readonly store: Store,
    private readonly notifications: NotificationService,
  ) {}

  /** A carrier refused a text to this contact for good, for `why`. Idempotent (keyed by the delivery). */
  async unreachable(d: Delivery, why: Unreachable): Promise<void> {
    if (why === 'opted_out') await this.store.setContactState(d.userId, d.contactId, 'opted_out', ['pending', 'confirmed', 'declined']);
    await this.notifications.recordInBackground(contactUnreachableNotification(d, why, newId('ntf')));
  }
}
