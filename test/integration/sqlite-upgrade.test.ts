/**
 * A database written by version 1 of the schema opens with the current code: the
 * migration that rebuilds `timers` and `deliveries` (new states, new columns) keeps
 * every row and every value, and the indexes the statements rely on exist again.
 */
import Database from 'better-sqlite3';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { tempSqliteFile, type TempSqliteFile } from '../helpers/sqlite-store.js';

const dirs: TempSqliteFile[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) d.cleanup();
});

function versionOneFile(): string {
  const tmp = tempSqliteFile();
  dirs.push(tmp);
  const { file } = tmp;
  const db = new Database(file);
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
  db.exec(readFileSync(join(process.cwd(), 'src', 'store', 'sqlite', 'migrations', '001_init.sql'), 'utf8'));
  db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (1, 0)').run();
  db.prepare(
    `INSERT INTO timers (id, user_id, status, started_at, expires_at, resolved_at, updated_at, location_name, lat, lng, display_name, extensions, escalation, incident_id, expired_by_fence)
     VALUES ('t1', 'u1', 'expired', 1000, 2000, 2500, 2600, 'Cafe', 12.5, 77.25, 'Mara', 2, 'done', 'i1', 7),
            ('t2', 'u2', 'expired', 1000, 2000, 2500, 2600, NULL, NULL, NULL, NULL, 0, 'pending', NULL, 8),
            ('t3', 'u3', 'active', 1000, 9000, NULL, 1000, NULL, NULL, NULL, NULL, 0, 'none', NULL, NULL)`,
  ).run();
  db.prepare(
    `INSERT INTO incidents (id, timer_id, user_id, status, deadline, created_at, updated_at, fence) VALUES ('i1', 't1', 'u1', 'false_alarm', 2000, 2500, 2700, 7)`,
  ).run();
  db.prepare(
    `INSERT INTO deliveries (key, incident_id, user_id, contact_id, contact_name, phone, kind, body, status, attempts, next_attempt_at, lease_until, carrier, provider_message_id, last_error, created_at, updated_at)
     VALUES ('i1:c1', 'i1', 'u1', 'c1', 'A', '+14155550100', 'sos', 'SOS', 'dead', 6, 3000, NULL, 'twilio', NULL, 'http_503', 2500, 3100),
            ('i1:c2', 'i1', 'u1', 'c2', 'B', '+14155550101', 'sos', 'SOS', 'sent', 1, 2500, NULL, 'twilio', 'SM1', NULL, 2500, 2550)`,
  ).run();
  db.close();
  return file;
}

describe('upgrading a version-1 SQLite database', () => {
  it('keeps every timer, incident and delivery with its values; the new fields start empty', async () => {
    const file = versionOneFile();
    const store = await SqliteStore.open({ file });
    try {
      expect(await store.getTimer('t1')).toEqual({
        id: 't1',
        userId: 'u1',
        status: 'expired',
        startedAt: new Date(1000),
        expiresAt: new Date(2000),
        resolvedAt: new Date(2500),
        updatedAt: new Date(2600),
        locationName: 'Cafe',
        location: { lat: 12.5, lng: 77.25 },
        displayName: 'Mara',
        extensions: 2,
        escalation: 'done',
        incidentId: 'i1',
        expiredByFence: 7,
      });
      expect((await store.pendingEscalations(10)).map((t) => t.id)).toEqual(['t2']);
      expect(await store.overdue()).toMatchObject({ count: 1 });
      expect(await store.getIncident('i1')).toMatchObject({ status: 'false_alarm', updatedAt: new Date(2700) });
      expect((await store.getIncident('i1'))?.allClear).toBeUndefined();
      expect(await store.pendingAllClears(10)).toEqual([]);
      expect(await store.getDelivery('i1:c1')).toMatchObject({ status: 'dead', attempts: 6, lastError: 'http_503', carrier: 'twilio' });
      expect((await store.getDelivery('i1:c2'))?.maybeAccepted).toBeUndefined();
      expect(await store.deliveryBacklog()).toEqual({ pending: 0, dead: 1 });
      // the new states are accepted by the rebuilt tables
      expect((await store.recordEscalationFailure('t2', 'boom', 1))?.escalation).toBe('failed');
    } finally {
      await store.close();
    }
    // a second open applies nothing again
    const again = await SqliteStore.open({ file });
    expect((await again.failedEscalations(10)).map((t) => t.id)).toEqual(['t2']);
    await again.close();
  });
});

/** A database at `last` (every migration up to it). */
function fileAtVersion(last: number): { file: string; db: Database.Database } {
  const tmp = tempSqliteFile();
  dirs.push(tmp);
  const db = new Database(tmp.file);
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
  const dir = join(process.cwd(), 'src', 'store', 'sqlite', 'migrations');
  for (const f of readdirSync(dir).sort()) {
    const version = Number(f.split('_')[0]);
    if (!f.endsWith('.sql') || version > last) continue;
    db.exec(readFileSync(join(dir, f), 'utf8'));
    db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)').run(version);
  }
  return { file: tmp.file, db };
}

describe('upgrading a version-24 SQLite database (every access audited, migration 25)', () => {
  it("keeps every audit line and names its person: the incident's, or the one whose tokens were revoked; new actions are accepted", async () => {
    const { file, db } = fileAtVersion(24);
    db.prepare(
      `INSERT INTO incidents (id, timer_id, user_id, status, deadline, created_at, updated_at, fence) VALUES ('i1', 't1', 'rita', 'active', 1, 1, 1, 1)`,
    ).run();
    db.prepare(
      `INSERT INTO audit (id, at, actor, action, target, incident_id) VALUES ('note:n1', 1000, 'mod-ann', 'incident.note', 'i1', 'i1'),
        ('revoke:u9:2000', 2000, 'mod-bob', 'user.revoke_tokens', 'u9', NULL), ('note:n2', 3000, 'mod-ann', 'incident.note', 'gone', 'gone')`,
    ).run();
    db.close();
    const store = await SqliteStore.open({ file });
    try {
      expect(await store.listAudit({ limit: 10 })).toEqual([
        { id: 'note:n2', at: new Date(3000), actor: 'mod-ann', action: 'incident.note', target: 'gone', incidentId: 'gone' },
        { id: 'revoke:u9:2000', at: new Date(2000), actor: 'mod-bob', action: 'user.revoke_tokens', target: 'u9', person: 'u9' },
        { id: 'note:n1', at: new Date(1000), actor: 'mod-ann', action: 'incident.note', target: 'i1', incidentId: 'i1', person: 'rita' },
      ]);
      expect((await store.listAudit({ limit: 10, filter: { person: 'rita' } })).map((l) => l.id)).toEqual(['note:n1']);
      await store.transitionIncident('i1', ['active'], 'acknowledged', 'mod-cat', { audit: true });
      expect((await store.listAudit({ limit: 10, filter: { actor: 'mod-cat' } })).map((l) => l.action)).toEqual(['incident.acknowledge']);
    } finally {
      await store.close();
    }
  });
});

/** A database at version 12 (every migration before token revocation), with one moderator's audit line. */
function versionTwelveFile(): string {
  const tmp = tempSqliteFile();
  dirs.push(tmp);
  const { file } = tmp;
  const db = new Database(file);
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
  const dir = join(process.cwd(), 'src', 'store', 'sqlite', 'migrations');
  for (const f of readdirSync(dir).sort()) {
    const version = Number(f.split('_')[0]);
    if (!f.endsWith('.sql') || version > 12) continue;
    db.exec(readFileSync(join(dir, f), 'utf8'));
    db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)').run(version);
  }
  db.prepare(
    `INSERT INTO audit (id, at, actor, action, target, incident_id) VALUES ('note:n1', 1000, 'mod-ann', 'incident.note', 'i1', 'i1')`,
  ).run();
  db.close();
  return file;
}

describe('upgrading a version-12 SQLite database (token revocation, migration 13)', () => {
  it("keeps every audit line; a moderator's revocation is audited beside them, naming the person and no incident", async () => {
    const store = await SqliteStore.open({ file: versionTwelveFile() });
    try {
      const stamp = await store.revokeTokens('u9', 'mod-bob');
      expect(await store.tokensNotBefore(['u9'])).toEqual(new Map([['u9', stamp]]));
      const lines = await store.listAudit({ limit: 10 });
      expect(lines).toEqual([
        { id: `revoke:u9:${stamp.getTime()}`, at: stamp, actor: 'mod-bob', action: 'user.revoke_tokens', target: 'u9', person: 'u9' },
        { id: 'note:n1', at: new Date(1000), actor: 'mod-ann', action: 'incident.note', target: 'i1', incidentId: 'i1' },
      ]);
    } finally {
      await store.close();
    }
  });
});
