/**
 * A person's data is theirs (docs/privacy.md, "Your data"): everything Vigil holds about the
 * caller, and its erasure. An erasure is refused while an incident of theirs is open or a timer
 * live (409: nothing is erased; they ask again once it is over) — an SOS in progress needs its
 * records, and erasing a live timer would silently switch their safety net off.
 */
import { Conflict } from '../domain/errors.js';
import type { Store } from '../store/port.js';
import type { ErasedCounts, PersonalData } from '../store/port-personal.js';

export class PersonalDataService {
  constructor(
    private readonly store: Pick<Store, 'personalData' | 'erasePerson'>,
    /** the name a person keeps in the records that stay (domain/contact.ts ContactIdKey.pseudonym) */
    private readonly pseudonym: (userId: string) => string,
  ) {}

  export(userId: string): Promise<PersonalData> {
    return this.store.personalData(userId);
  }

  async erase(userId: string): Promise<{ pseudonym: string; counts: ErasedCounts }> {
    const pseudonym = this.pseudonym(userId);
    const r = await this.store.erasePerson(userId, pseudonym);
    if (r.kind === 'incident_open')
      throw Conflict('incident_open', 'an SOS of yours is open: your data is erased only once it is closed; ask again then', {
        incidentId: r.incidentId,
      });
    if (r.kind === 'timer_live')
      throw Conflict('timer_live', 'a timer of yours is running: check in or cancel it, then ask again', { timerId: r.timerId });
    return { pseudonym, counts: r.counts };
  }
}
