/** Incident operations of the SQLite store (SQL in ./incidents-statements.ts). */
import type { Incident, IncidentStatus } from '../../domain/incident.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import type { Timer } from '../../domain/timer.js';
import type { ChangedSince, OpenedIncident, TransitionOptions } from '../port.js';
import { read, write, type Ctx } from './ctx.js';
import { moderatorStep } from '../../domain/moderation.js';
import { auditRow } from './moderation.js';
import { incidentInsertParams, toIncident, type IncidentRow } from './rows.js';

const incidentOrNull = (row: unknown): Incident | null => (row ? toIncident(row as IncidentRow) : null);

/**
 * The incident of an expired timer: inserted, or the one it already has (unique per timer,
 * invariant 3), or, while the person has another open incident, that one, which the timer
 * joins (one open SOS per person: listed in `linkedTimers`, `timer` among the sources). One
 * place for both escalation paths: openIncident and the group commit (./batch.ts); the
 * caller runs it inside its write, so the three cases are decided atomically.
 */
export function openIncidentRow(c: Ctx, timer: Timer, fence: number, id: string, now: number): OpenedIncident {
  // the person's open incident first, then the insert, in the caller's write (so nothing comes between them): one
  // INSERT … SELECT … WHERE NOT EXISTS reading the table it writes cost SQLite a temporary copy of each row, and a
  // burst's escalations about twice the time
  const open = c.st.incidentOpenOfUser.get(timer.userId) as IncidentRow | undefined;
  if (!open) {
    const inserted = c.st.incidentInsert.get(incidentInsertParams(timer, fence, id, now)) as IncidentRow | undefined;
    if (inserted) return { incident: toIncident(inserted), created: true };
  }
  if (open?.timer_id === timer.id) return { incident: toIncident(open), created: false };
  const own = c.st.incidentByTimer.get(timer.id) as IncidentRow | undefined;
  if (own) return { incident: toIncident(own), created: false };
  if (!open) throw new Error(`timer ${timer.id}: its incident was neither inserted nor found`);
  return { incident: toIncident(joinRow(c, open, timer.id)), created: false, joined: true };
}

/** `timerId` joins the open incident `open`: linked, and `timer` among its sources. Idempotent. */
export function joinRow(c: Ctx, open: IncidentRow, timerId: string): IncidentRow {
  const linked = (c.st.incidentLinkTimer.get({ id: open.id, timerId }) as IncidentRow | undefined) ?? open;
  return (c.st.incidentAddSource.get({ id: open.id, source: 'timer' }) as IncidentRow | undefined) ?? linked;
}

export const openIncident = write((c, timer: Timer, fence: number, id: string): OpenedIncident => {
  const run = c.db.transaction(() => openIncidentRow(c, timer, fence, id, c.clock()));
  return run.immediate();
});

export const getIncident = read((c, id: string): Incident | null => incidentOrNull(c.st.incidentById.get(id)));

export const incidentForTimer = read((c, timerId: string): Incident | null => incidentOrNull(c.st.incidentByTimer.get(timerId)));

export const listIncidents = read((c, filter: { status?: IncidentStatus } & ChangedSince = {}): Incident[] => {
  const { status, since } = filter;
  const st = since
    ? status
      ? c.st.incidentsSinceByStatus
      : c.st.incidentsSince
    : status
      ? c.st.incidentsOldestByStatus
      : c.st.incidentsOldest;
  const rows = st.all({
    status: status ?? null,
    since: since?.getTime() ?? null,
    sinceId: filter.sinceId ?? null,
    limit: filter.limit ?? PAGE_SIZE,
  }) as IncidentRow[];
  return rows.map(toIncident);
});

export const transitionIncident = write(
  (c, id: string, from: readonly IncidentStatus[], to: IncidentStatus, by: string, opts: TransitionOptions = {}): Incident | null => {
    const st =
      to === 'acknowledged'
        ? c.st.incidentAcknowledge
        : to === 'false_alarm'
          ? c.st.incidentFalseAlarm
          : opts.closingTexts
            ? c.st.incidentResolveClosing
            : c.st.incidentResolve;
    // the move and the moderator's audit line, one transaction: neither is ever recorded without the other
    const run = c.db.transaction((): Incident | null => {
      const now = c.clock();
      const moved = incidentOrNull(st.get({ id, to, by, from: JSON.stringify(from), now }));
      if (moved && opts.audit) auditRow(c, moderatorStep(moved, to, by), now);
      return moved;
    });
    return run.immediate();
  },
);

export const oweAllClear = write((c, id: string): Incident | null => incidentOrNull(c.st.incidentOweAllClear.get({ id })));

export const pendingAllClears = read((c, limit: number): Incident[] =>
  (c.st.incidentsAllClearPending.all(limit) as IncidentRow[]).map(toIncident),
);

export const markAllClearDone = write((c, incidentId: string): boolean => c.st.incidentAllClearDone.run(incidentId).changes === 1);
