/**
 * Contract cases for "every access audited" (docs/privacy.md, "The audit"): a moderator's
 * acknowledge, resolve and retry write their line with the change, reads write one line per
 * call, and the audit is listed by actor, person and incident.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { AuditEntry } from '../../src/domain/moderation.js';
import type { Store } from '../../src/store/port.js';
import { arm, openedIncident, type ContractContext } from './store-contract-helpers.js';

const MOD = 'mod-ann';

const linesOf = async (store: Store, pred: (l: AuditEntry) => boolean) => (await store.listAudit({ limit: 100 })).filter(pred);

/** Every line the filter lists, page by page (`limit` per page). */
async function allPages(store: Store, filter: Parameters<Store['listAudit']>[0]['filter'], limit: number): Promise<AuditEntry[]> {
  const out: AuditEntry[] = [];
  let page = await store.listAudit({ limit, filter });
  for (let i = 0; i < 100 && page.length > 0; i++) {
    out.push(...page);
    const last = page[page.length - 1]!;
    page = await store.listAudit({ before: { at: last.at, id: last.id }, limit, filter });
  }
  return out;
}

export function auditCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('audit', () => {
    it("a moderator's acknowledge and resolve write their line with the move (person and incident named); a refused CAS writes none", async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      // refused (wrong state): nothing moves, no line
      expect(await store.transitionIncident(incident.id, ['acknowledged'], 'resolved', MOD, { audit: true })).toBeNull();
      expect(await linesOf(store, (l) => l.incidentId === incident.id)).toEqual([]);

      const acked = await store.transitionIncident(incident.id, ['active'], 'acknowledged', MOD, { audit: true });
      expect(acked?.status).toBe('acknowledged');
      const resolved = await store.transitionIncident(incident.id, ['active', 'acknowledged'], 'resolved', 'mod-bob', { audit: true });
      expect(resolved?.status).toBe('resolved');
      const lines = await linesOf(store, (l) => l.incidentId === incident.id);
      expect(lines.map(({ id, actor, action, target, person }) => ({ id, actor, action, target, person })).reverse()).toEqual([
        { id: `ack:${incident.id}`, actor: MOD, action: 'incident.acknowledge', target: incident.id, person: incident.userId },
        { id: `resolve:${incident.id}`, actor: 'mod-bob', action: 'incident.resolve', target: incident.id, person: incident.userId },
      ]);
      // a repeat (nothing moves) keeps one line per step, and names who took it, not who repeated it
      expect(await store.transitionIncident(incident.id, [], 'acknowledged', 'mod-cat', { audit: true })).toBeNull();
      expect(await store.transitionIncident(incident.id, [], 'resolved', 'mod-cat', { audit: true })).toBeNull();
      expect((await linesOf(store, (l) => l.incidentId === incident.id)).map((l) => l.actor).sort()).toEqual([MOD, 'mod-bob']);
    });

    it("the person's own false alarm (no `audit`) writes no line", async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      expect(await store.transitionIncident(incident.id, ['active'], 'false_alarm', incident.userId)).not.toBeNull();
      expect(await linesOf(store, (l) => l.incidentId === incident.id)).toEqual([]);
    });

    it('a retry of a dead-lettered escalation writes its line with the CAS (the person named); a refused retry writes none', async () => {
      const store = ctx.store();
      const { timer } = await openedIncident(store);
      expect(await store.retryEscalation(timer.id, MOD)).toBeNull(); // pending, not failed
      expect(await linesOf(store, (l) => l.target === timer.id)).toEqual([]);
      await store.recordEscalationFailure(timer.id, 'boom', 1);
      expect(await store.retryEscalation(timer.id, MOD)).not.toBeNull();
      const lines = await linesOf(store, (l) => l.target === timer.id);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ actor: MOD, action: 'escalation.retry', target: timer.id, person: timer.userId });
      expect(lines[0]!.id).toMatch(new RegExp(`^retry:${timer.id}:\\d+$`));
      // a repeat finds it pending: no second line
      expect(await store.retryEscalation(timer.id, 'mod-bob')).toBeNull();
      expect(await linesOf(store, (l) => l.target === timer.id)).toHaveLength(1);
    });

    it('recordAccess writes every line given (one write), with its reason; a line id written twice stays one line', async () => {
      const store = ctx.store();
      const person = `p-${randomUUID()}`;
      const id = `read:${randomUUID()}`;
      await store.recordAccess([{ id, actor: MOD, action: 'timers.read', target: person, person, reason: 'she called support' }]);
      await store.recordAccess([{ id, actor: MOD, action: 'timers.read', target: person, person, reason: 'she called support' }]);
      const { incident } = await openedIncident(store);
      await store.recordAccess([
        {
          id: `read:${randomUUID()}`,
          actor: MOD,
          action: 'trail.read',
          target: incident.id,
          incidentId: incident.id,
          person: incident.userId,
        },
        {
          id: `read:${randomUUID()}`,
          actor: MOD,
          action: 'incident.read',
          target: incident.id,
          incidentId: incident.id,
          person: incident.userId,
        },
      ]);
      const mine = await linesOf(store, (l) => l.person === person);
      expect(mine).toEqual([
        { id, at: expect.any(Date), actor: MOD, action: 'timers.read', target: person, person, reason: 'she called support' },
      ]);
      expect((await linesOf(store, (l) => l.incidentId === incident.id)).map((l) => l.action).sort()).toEqual([
        'incident.read',
        'trail.read',
      ]);
    });

    it('listAudit filters by actor, person and incident (each alone and together), paging newest first with the filter', async () => {
      const store = ctx.store();
      const a = await openedIncident(store);
      const b = await openedIncident(store);
      const read = (actor: string, i: typeof a.incident) =>
        store.recordAccess([{ id: `read:${randomUUID()}`, actor, action: 'trail.read', target: i.id, incidentId: i.id, person: i.userId }]);
      for (let n = 0; n < 3; n++) await read(MOD, a.incident);
      await read('mod-bob', a.incident);
      await read(MOD, b.incident);
      await store.transitionIncident(b.incident.id, ['active'], 'acknowledged', 'mod-bob', { audit: true });

      const ids = (ls: AuditEntry[]) => ls.map((l) => l.id);
      const byIncidentA = await allPages(store, { incidentId: a.incident.id }, 2);
      expect(byIncidentA).toHaveLength(4);
      expect(byIncidentA.every((l) => l.incidentId === a.incident.id)).toBe(true);
      expect(new Set(ids(byIncidentA)).size).toBe(4);
      const byPersonB = await allPages(store, { person: b.incident.userId }, 1);
      expect(byPersonB.map((l) => l.action).sort()).toEqual(['incident.acknowledge', 'trail.read']);
      const bob = await allPages(store, { actor: 'mod-bob' }, 1);
      expect(bob.map((l) => l.incidentId).sort()).toEqual([a.incident.id, b.incident.id].sort());
      const annOnA = await allPages(store, { actor: MOD, incidentId: a.incident.id }, 2);
      expect(annOnA).toHaveLength(3);
      const annOnPersonB = await allPages(store, { actor: MOD, person: b.incident.userId }, 10);
      expect(annOnPersonB.map((l) => l.incidentId)).toEqual([b.incident.id]);
      expect(await store.listAudit({ limit: 10, filter: { actor: 'nobody' } })).toEqual([]);
      // newest first within a filter
      for (let i = 1; i < byIncidentA.length; i++) {
        const [p, q] = [byIncidentA[i - 1]!, byIncidentA[i]!];
        expect(p.at.getTime() > q.at.getTime() || (p.at.getTime() === q.at.getTime() && p.id > q.id)).toBe(true);
      }
    });

    it("openIncidentOf: the person's open incident, none once it is closed or for someone without one", async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      const other = await arm(store);
      expect((await store.openIncidentOf(incident.userId))?.id).toBe(incident.id);
      expect(await store.openIncidentOf(other.userId)).toBeNull();
      await store.transitionIncident(incident.id, ['active'], 'resolved', MOD, { audit: true });
      expect(await store.openIncidentOf(incident.userId)).toBeNull();
    });
  });
}
