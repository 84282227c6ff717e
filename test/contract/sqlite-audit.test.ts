/**
 * SQLite: a moderator's action and its audit line are one transaction. A trigger makes the
 * audit insert fail (a full disk, a constraint): the action must not stand without its line.
 * Reads: a read whose line cannot be written is refused before anything is read.
 */
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/port.js';
import { tempSqliteStore, type TempSqliteStore } from '../helpers/sqlite-store.js';
import { openedIncident } from './store-contract-helpers.js';

let t: TempSqliteStore;
let raw: Database.Database;

beforeEach(async () => {
  t = await tempSqliteStore();
  raw = new Database(t.file);
});

afterEach(async () => {
  raw.close();
  await t.cleanup();
});

const breakAudit = () => raw.exec("CREATE TRIGGER audit_down BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'audit down'); END");
const mendAudit = () => raw.exec('DROP TRIGGER audit_down');
const lines = async (store: Store) => store.listAudit({ limit: 100 });

describe('sqlite: an action and its audit line are one write', () => {
  it('acknowledge and resolve: when the line cannot be written, the incident does not move', async () => {
    const { incident } = await openedIncident(t.store);
    breakAudit();
    await expect(t.store.transitionIncident(incident.id, ['active'], 'acknowledged', 'mod-ann', { audit: true })).rejects.toThrow();
    await expect(t.store.transitionIncident(incident.id, ['active'], 'resolved', 'mod-ann', { audit: true })).rejects.toThrow();
    expect((await t.store.getIncident(incident.id))?.status).toBe('active');
    mendAudit();
    expect(await lines(t.store)).toEqual([]);
    expect(await t.store.transitionIncident(incident.id, ['active'], 'acknowledged', 'mod-ann', { audit: true })).not.toBeNull();
    expect((await lines(t.store)).map((l) => l.id)).toEqual([`ack:${incident.id}`]);
  });

  it('retry: when the line cannot be written, the escalation stays dead-lettered', async () => {
    const { timer } = await openedIncident(t.store);
    await t.store.recordEscalationFailure(timer.id, 'boom', 1);
    breakAudit();
    await expect(t.store.retryEscalation(timer.id, 'mod-ann')).rejects.toThrow();
    expect((await t.store.getTimer(timer.id))?.escalation).toBe('failed');
    mendAudit();
    expect(await t.store.retryEscalation(timer.id, 'mod-ann')).not.toBeNull();
    expect((await lines(t.store)).map((l) => l.action)).toEqual(['escalation.retry']);
  });

  it('a read of many trails: its lines are one write (all or none)', async () => {
    const a = await openedIncident(t.store);
    const b = await openedIncident(t.store);
    raw.exec(
      `CREATE TRIGGER audit_second BEFORE INSERT ON audit WHEN NEW.incident_id = '${b.incident.id}' BEGIN SELECT RAISE(ABORT, 'audit down'); END`,
    );
    const line = (i: typeof a.incident) => ({
      id: `read:r1:${i.id}`,
      actor: 'mod-ann',
      action: 'trail.read' as const,
      target: i.id,
      incidentId: i.id,
      person: i.userId,
    });
    await expect(t.store.recordAccess([line(a.incident), line(b.incident)])).rejects.toThrow();
    expect(await lines(t.store)).toEqual([]);
  });
});
