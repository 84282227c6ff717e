/**
 * The nudge before the SOS, run by the sweep under its lock: claim the timers entering the
 * warning window (a CAS stamps `warnedAt`, so each deadline warns once even when two sweepers
 * run), push `timer.warning` and the inbox entry to the person's sockets. An extension clears
 * the stamp; "I'm safe" ends the timer: either still wins over the SOS.
 */
import type { NotificationService } from '../app/notifications.js';
import type { WarningWindow } from '../domain/warning.js';
import { warningEvent, type EventPublisher } from '../realtime/events.js';
import type { Store } from '../store/port.js';

export class Warner {
  constructor(
    private readonly store: Store,
    private readonly events: EventPublisher,
    private readonly notifications: NotificationService,
    private readonly settings: { window: WarningWindow; batchSize: number },
  ) {}

  /** One claim of up to `batchSize` timers; how many were warned. */
  async run(): Promise<number> {
    const warned = await this.store.claimWarnings(this.settings.batchSize, this.settings.window);
    for (const w of warned) {
      this.events.publish(warningEvent(w.timer));
      if (w.notification) this.notifications.announce(w.notification);
    }
    return warned.length;
  }
}
