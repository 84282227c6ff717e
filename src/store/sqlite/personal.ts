/**
 * A person's own data on the SQLite store: the export (one read transaction's worth of
 * statements) and the erasure, one IMMEDIATE transaction with its checks (no open incident, no
 * live timer), so nothing can open an SOS or arm a timer between the check and the erasure.
 * SQL in ./personal-statements.ts.
 */
import type { ErasedCounts, ErasureResult, PersonalData } from '../port-personal.js';
import { read, write } from './ctx.js';
import { toFix, type FixRow } from './location.js';
import {
  toContact,
  toContactSettings,
  toIncident,
  toTimer,
  type ContactRow,
  type ContactSettingsRow,
  type IncidentRow,
  type TimerRow,
} from './rows.js';
import { toNotification, type NotificationRow } from './safety.js';

export const personalData = read((c, userId: string): PersonalData => {
  const run = c.db.transaction((): PersonalData => ({
    timers: (c.st.personTimers.all(userId) as TimerRow[]).map(toTimer),
    fixes: (c.st.personFixes.all(userId) as FixRow[]).map(toFix),
    contacts: (c.st.personContacts.all(userId) as ContactRow[]).map(toContact),
    contactSettings: toContactSettings(c.st.contactSettingsOf.get(userId) as ContactSettingsRow | undefined),
    duressPinSet: (c.st.personDuressPinSet.get(userId) as { n: number }).n > 0,
    notifications: (c.st.personNotifications.all(userId) as NotificationRow[]).map(toNotification),
    incidents: (c.st.personIncidents.all(userId) as IncidentRow[]).map(toIncident),
    idempotencyRecords: (c.st.personIdempotencyCount.get({ userId }) as { n: number }).n,
  }));
  // one (deferred) read transaction: every part from the same snapshot
  return run.deferred();
});

export const erasePerson = write((c, userId: string, pseudonym: string): ErasureResult => {
  const run = c.db.transaction((): ErasureResult => {
    const open = c.st.incidentOpenOfUser.get(userId) as IncidentRow | undefined;
    if (open) return { kind: 'incident_open', incidentId: open.id };
    const live = c.st.personLiveTimer.get(userId) as { id: string } | undefined;
    if (live) return { kind: 'timer_live', timerId: live.id };
    const p = { userId, pseudonym };
    // the list's language and time zone go with the list (counted with it)
    c.st.eraseContactSettings.run(userId);
    const counts: ErasedCounts = {
      fixes: c.st.eraseFixes.run(userId).changes,
      timers: c.st.eraseTimers.run(userId).changes,
      contacts: c.st.eraseContacts.run(userId).changes,
      duressPin: c.st.eraseDuressPin.run(userId).changes,
      notifications: c.st.eraseNotifications.run(userId).changes,
      idempotencyRecords: c.st.eraseIdempotency.run(userId).changes + c.st.eraseSosIdempotency.run(userId).changes,
      incidents: c.st.pseudonymiseIncidents.run(p).changes,
      deliveries: c.st.pseudonymiseDeliveries.run(p).changes,
      auditLines: 0,
    };
    c.st.pseudonymiseAuditIds.run(p);
    c.st.pseudonymiseAuditTargets.run(p);
    counts.auditLines = c.st.pseudonymiseAuditPersons.run(p).changes;
    return { kind: 'erased', counts };
  });
  return run.immediate();
});
