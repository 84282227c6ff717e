/**
 * The safety features on SQLite: the panic SOS, the warning claim, the inbox. The panic runs
 * in one IMMEDIATE transaction, so it is atomic against a sweep or another panic in any
 * process sharing the file: whichever writer comes second sees what the first one did.
 * SQL in ./safety-statements.ts.
 */
import { randomUUID } from 'node:crypto';
import { MAX_PANIC_NOTES, panicSlot, type Incident } from '../../domain/incident.js';
import { warningNotification, type NewNotification, type Notification, type NotificationKind } from '../../domain/notification.js';
import type { Timer } from '../../domain/timer.js';
import type { WarningWindow } from '../../domain/warning.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import type { NewPanic, NotificationQuery, PanicKey, PanicResult, Warned } from '../port-safety.js';
import { read, write, type Ctx } from './ctx.js';
import { toIncident, toTimer, type IncidentRow, type TimerRow } from './rows.js';

export interface NotificationRow {
  id: string;
  user_id: string;
  key: string;
  kind: NotificationKind;
  title: string;
  body: string;
  timer_id: string | null;
  incident_id: string | null;
  created_at: number;
  read_at: number | null;
}

export const toNotification = (r: NotificationRow): Notification => {
  const n: Notification = {
    id: r.id,
    userId: r.user_id,
    key: r.key,
    kind: r.kind,
    title: r.title,
    body: r.body,
    createdAt: new Date(r.created_at),
  };
  if (r.timer_id !== null) n.timerId = r.timer_id;
  if (r.incident_id !== null) n.incidentId = r.incident_id;
  if (r.read_at !== null) n.readAt = new Date(r.read_at);
  return n;
};

type Created = { notification: Notification; created: boolean };

export const raisePanic = write((c, p: NewPanic, idem?: PanicKey): PanicResult => {
  const run = c.db.transaction((): PanicResult => {
    const now = c.clock();
    if (idem) {
      const prior = c.st.sosIdempotencyGet.get(p.userId, idem.key) as { fingerprint: string; incident_id: string } | undefined;
      if (prior) {
        if (prior.fingerprint !== idem.fingerprint) return { kind: 'idempotency_mismatch' };
        return { kind: 'replayed', incident: toIncident(c.st.incidentById.get(prior.incident_id) as IncidentRow) };
      }
    }
    const result = panicOnce(c, p, now);
    if (idem) c.st.sosIdempotencyInsert.run(p.userId, idem.key, idem.fingerprint, result.incident.id, now);
    return result;
  });
  return run.immediate();
});

function panicOnce(c: Ctx, p: NewPanic, now: number): Exclude<PanicResult, { kind: 'replayed' | 'idempotency_mismatch' }> {
  // a duress SOS never touches a live timer: the phone would see it expire (it may be a timer armed after the check-in)
  const live = p.source === 'duress' ? undefined : (c.st.liveTimerOfUser.get(p.userId) as TimerRow | undefined);
  const open = c.st.incidentOpenOfUser.get(p.userId) as IncidentRow | undefined;
  if (open) {
    const added = c.st.incidentAddSource.get({ id: open.id, source: p.source ?? 'panic' }) as IncidentRow | undefined;
    const linked = live ? (c.st.timerLinkToIncident.get({ id: live.id, incidentId: open.id, now }) as TimerRow | undefined) : undefined;
    // the timer joins the open incident: it can check in and post fixes there, the trail covers it
    let row = added ?? open;
    if (linked) row = (c.st.incidentLinkTimer.get({ id: open.id, timerId: linked.id }) as IncidentRow | undefined) ?? row;
    if (p.note !== undefined) row = addNote(c, open.id, p.note, now) ?? row;
    const r = { kind: 'attached' as const, incident: toIncident(row), sourceAdded: added !== undefined };
    return linked ? { ...r, timer: toTimer(linked) } : r;
  }
  // the person's timer: the live one (expired now by the panic), else one a sweep expired whose incident is not open yet
  const taken = live
    ? (c.st.timerExpireByPanic.get({ id: live.id, now }) as TimerRow)
    : (c.st.pendingTimerOfUser.get(p.userId) as TimerRow | undefined);
  if (taken) {
    const row = insertIncident(c, p, taken.id, now, taken);
    if (row) return { kind: 'created', incident: toIncident(withNote(c, row, p, now)), timer: toTimer(taken) };
  }
  const row = insertIncident(c, p, panicSlot(p.incidentId), now);
  if (!row) throw new Error(`panic incident ${p.incidentId} was not inserted`);
  return { kind: 'created', incident: toIncident(withNote(c, row, p, now)) };
}

function addNote(c: Ctx, incidentId: string, text: string, at: number): IncidentRow | undefined {
  return c.st.incidentAddPanicNote.get({ id: incidentId, note: JSON.stringify({ text, at }), max: MAX_PANIC_NOTES }) as
    IncidentRow | undefined;
}

const withNote = (c: Ctx, row: IncidentRow, p: NewPanic, now: number): IncidentRow =>
  p.note === undefined ? row : (addNote(c, row.id, p.note, now) ?? row);

/** The panic's own location wins; the timer's when the panic carries none. */
function insertIncident(c: Ctx, p: NewPanic, timerId: string, now: number, timer?: TimerRow): IncidentRow | undefined {
  const own = p.location !== undefined || p.locationName !== undefined;
  return c.st.panicIncidentInsert.get({
    id: p.incidentId,
    timerId,
    userId: p.userId,
    now,
    locationName: (own ? p.locationName : timer?.location_name) ?? null,
    lat: (own ? p.location?.lat : timer?.lat) ?? null,
    lng: (own ? p.location?.lng : timer?.lng) ?? null,
    displayName: p.displayName ?? timer?.display_name ?? null,
    // a timer's own escalation (pending) is the outbox when there is one
    panicTexts: timer ? null : 'pending',
    source: p.source ?? 'panic',
  }) as IncidentRow | undefined;
}

export const pendingPanicTexts = read((c, limit: number): Incident[] =>
  (c.st.incidentsPanicTextsPending.all(limit) as IncidentRow[]).map(toIncident),
);

export const markPanicTexted = write((c, incidentId: string): boolean => c.st.incidentPanicTexted.run(incidentId).changes === 1);

export const pendingDuress = read((c, limit: number): Timer[] => (c.st.timersDuressPending.all(limit) as TimerRow[]).map(toTimer));

export const markDuressRaised = write((c, timerId: string): boolean => c.st.timerDuressRaised.run(timerId).changes === 1);

/** The warning stamps and their inbox entries in one transaction. */
export const claimWarnings = write((c, limit: number, w: WarningWindow): Warned[] => {
  if (w.beforeMs <= 0 || limit <= 0) return [];
  const run = c.db.transaction((): Warned[] => {
    const now = c.clock();
    const rows = c.st.timersClaimWarning.all({ now, beforeMs: w.beforeMs, graceMs: w.graceMs, limit }) as TimerRow[];
    return rows
      .map(toTimer)
      .sort((a, b) => a.expiresAt.getTime() - b.expiresAt.getTime())
      .map((timer) => {
        const n = insertNotification(c, warningNotification(timer, `ntf_${randomUUID()}`), now);
        return n.created ? { timer, notification: n.notification } : { timer };
      });
  });
  return run.immediate();
});

export const addNotification = write((c, n: NewNotification): Created => insertNotification(c, n, c.clock()));

/** One transaction for the lot (one commit instead of one each). */
export const addNotifications = write((c, list: NewNotification[]): Created[] => {
  if (list.length === 0) return [];
  const run = c.db.transaction(() => {
    const now = c.clock();
    return list.map((n) => insertNotification(c, n, now));
  });
  return run.immediate();
});

function insertNotification(c: Ctx, n: NewNotification, now: number): Created {
  const row = c.st.notificationInsert.get({
    id: n.id,
    userId: n.userId,
    key: n.key,
    kind: n.kind,
    title: n.title,
    body: n.body,
    timerId: n.timerId ?? null,
    incidentId: n.incidentId ?? null,
    now,
  }) as NotificationRow | undefined;
  if (row) return { notification: toNotification(row), created: true };
  return { notification: toNotification(c.st.notificationByKey.get(n.userId, n.key) as NotificationRow), created: false };
}

export const listNotifications = read((c, userId: string, q: NotificationQuery = {}): Notification[] => {
  const rows = c.st.notificationsPage.all({
    userId,
    unread: q.unread ? 1 : 0,
    before: q.before?.createdAt.getTime() ?? null,
    beforeId: q.before?.id ?? null,
    limit: q.limit ?? PAGE_SIZE,
  }) as NotificationRow[];
  return rows.map(toNotification);
});

export const markNotificationRead = write((c, userId: string, id: string): Notification | null => {
  const row = c.st.notificationRead.get({ id, userId, now: c.clock() }) as NotificationRow | undefined;
  return row ? toNotification(row) : null;
});

export const markAllNotificationsRead = write(
  (c, userId: string): number => c.st.notificationsReadAll.run({ userId, now: c.clock() }).changes,
);
