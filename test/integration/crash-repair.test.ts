/**
 * Invariant 4: no escalation is lost between two writes. A real process is killed
 * (SIGKILL) at a line of the escalation path; a restarted Vigil repairs it on its
 * next tick: exactly one incident and one SMS per contact.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConsoleCarrier } from '../../src/sms/console.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { tempSqliteFile } from '../helpers/sqlite-store.js';
import { eventually, startTestVigil, untilPast } from '../helpers/vigil.js';

const fixture = join(process.cwd(), 'test', 'fixtures', 'crash-escalation.ts');

async function armDueTimers(file: string, n: number): Promise<string[]> {
  const store = await SqliteStore.open({ file });
  const now = await store.now();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const userId = `crash-user-${i}`;
    await store.replaceContacts(userId, [
      { id: `c-${i}-a`, name: 'A', phone: '+14155550100' },
      { id: `c-${i}-b`, name: 'B', phone: '+14155550101' },
    ]);
    const r = await store.armTimer({
      id: `t-${i}`,
      userId,
      startedAt: new Date(now.getTime() - 120_000),
      expiresAt: new Date(now.getTime() - 1000),
    });
    if (r.kind !== 'created') throw new Error(r.kind);
    ids.push(r.timer.id);
  }
  await store.close();
  return ids;
}

describe.each(['before-incident', 'before-deliveries', 'before-mark'])('a sweeper killed %s', (point) => {
  it('is repaired by the next tick after restart: one incident per timer, one SMS per contact', async () => {
    const { dir, file, cleanup } = tempSqliteFile();
    try {
      const ids = await armDueTimers(file, 3);
      const r = spawnSync(process.execPath, ['--import', 'tsx', fixture, file, point], { encoding: 'utf8', timeout: 60_000 });
      expect(r.signal).toBe('SIGKILL');
      expect(r.stdout).not.toContain('sweep finished');

      const after = await SqliteStore.open({ file });
      const first = (await after.getTimer(ids[0]!))!;
      expect(first).toMatchObject({ status: 'expired', escalation: 'pending' });
      const before = await after.listIncidents();
      if (point === 'before-incident') expect(before).toHaveLength(0);
      await after.close();

      const carrier = new ConsoleCarrier({ info() {} });
      const v = await startTestVigil({}, { carrier }, dir);
      try {
        const store = v.vigil.store;
        await eventually(async () => {
          const ts = await Promise.all(ids.map((id) => store.getTimer(id)));
          return ts.every((t) => t?.escalation === 'done');
        }, 'repaired escalations');
        const incidents = await store.listIncidents();
        expect(incidents).toHaveLength(3);
        expect(new Set(incidents.map((i) => i.timerId))).toEqual(new Set(ids));
        const deliveries = await eventually(async () => {
          const ds = await store.deliveriesFor(incidents.map((i) => i.id));
          return ds.length === 6 && ds.every((d) => d.status === 'sent') ? ds : undefined;
        }, 'six sent deliveries');
        expect(new Set(deliveries.map((d) => d.key)).size).toBe(6);
        expect(carrier.outbox).toHaveLength(6);
      } finally {
        await v.stop({ keepData: true });
      }
    } finally {
      cleanup();
    }
  });
});

describe('restart', () => {
  it('keeps timers across a restart, and one that fell due while down escalates right after start', async () => {
    const first = await startTestVigil();
    const dir = first.dataDir;
    const tok = first.token('restart-user');
    await first.api(tok, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'A', phone: '+14155550100' }] });
    const t = (await first.api(tok, 'POST', '/v1/timers', { durationSeconds: 2 })).body.timer;
    await first.stop({ keepData: true });
    // the deadline passes while nothing runs (Vigil reads the system clock: no clock to move)
    await untilPast(t.expiresAt, 'the deadline to pass while Vigil is down');

    const second = await startTestVigil({}, {}, dir);
    try {
      // the embedded JWT secret was kept in DATA_DIR: the token minted before the restart still works
      const got = await second.api(tok, 'GET', `/v1/timers/${t.id}`);
      expect(got.status).toBe(200);
      const timer = await eventually(
        async () => {
          const r = await second.api(tok, 'GET', `/v1/timers/${t.id}`);
          return r.body.timer.incidentId ? r.body.timer : undefined;
        },
        'escalation after restart',
        5000,
      );
      expect(timer.status).toBe('expired');
    } finally {
      await second.stop();
    }
  });
});

const allClearFixture = join(process.cwd(), 'test', 'fixtures', 'crash-all-clear.ts');

describe.each(['before-all-clear', 'before-supersede', 'before-done'])('"I\'m safe" killed %s', (point) => {
  it('invariant 4: the false alarm records the all-clear it owes; a restarted Vigil sends it to each contact exactly once', async () => {
    const first = await startTestVigil({}, { manualTicks: true });
    const dir = first.dataDir;
    let timerId = '';
    let incidentId = '';
    const phones = ['+14155550110', '+14155550111', '+14155550112'];
    try {
      const tok = first.token('crash-safe', { name: 'Mara' });
      await first.api(tok, 'PUT', '/v1/me/contacts', { contacts: phones.map((phone, i) => ({ name: `C${i}`, phone })) });
      const armed = await first.api(tok, 'POST', '/v1/timers', { durationSeconds: 1 });
      timerId = armed.body.timer.id as string;
      await eventually(async () => {
        await first.vigil.sweeper.sweep();
        return (await first.vigil.store.getTimer(timerId))?.escalation === 'done';
      }, 'the SOS escalation');
      incidentId = (await first.vigil.store.incidentForTimer(timerId))!.id;
      // two SOS texts went out; the third waits in backoff after a refused attempt (it is superseded, no all-clear)
      const store = first.vigil.store;
      const claimed = await store.claimDeliveries(10, 30_000);
      expect(claimed).toHaveLength(3);
      for (const d of claimed) {
        const refused = d.phone === phones[2];
        await store.recordAttempt(
          d.key,
          d.attempts,
          refused
            ? { status: 'pending', carrier: 'console', error: 'http_503', nextAttemptAt: new Date(Date.now() + 3_600_000) }
            : { status: 'sent', carrier: 'console', providerMessageId: `pm-${d.key}` },
        );
      }
    } finally {
      await first.stop({ keepData: true });
    }
    try {
      const file = join(dir, 'vigil.db');
      const r = spawnSync(process.execPath, ['--import', 'tsx', allClearFixture, file, timerId, 'crash-safe', point], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.signal).toBe('SIGKILL');
      expect(r.stdout).not.toContain('check-in finished');

      const after = await SqliteStore.open({ file });
      expect(await after.getIncident(incidentId)).toMatchObject({ status: 'false_alarm', allClear: 'pending' });
      const clearsBefore = (await after.deliveriesFor([incidentId])).filter((d) => d.kind === 'all_clear');
      expect(clearsBefore).toHaveLength(point === 'before-all-clear' ? 0 : 2);
      await after.close();

      const carrier = new ConsoleCarrier({ info() {} });
      const v = await startTestVigil({}, { carrier }, dir);
      try {
        const store = v.vigil.store;
        await eventually(async () => (await store.getIncident(incidentId))?.allClear === 'done', 'the all-clear repaired');
        const ds = await eventually(async () => {
          const all = await store.deliveriesFor([incidentId]);
          const clears = all.filter((d) => d.kind === 'all_clear');
          return clears.length === 2 && clears.every((d) => d.status === 'sent') ? all : undefined;
        }, 'two all-clears sent');
        expect(ds.find((d) => d.kind === 'sos' && d.phone === phones[2])).toMatchObject({ status: 'superseded' });
        expect(
          ds
            .filter((d) => d.kind === 'all_clear')
            .map((d) => d.phone)
            .sort(),
        ).toEqual([phones[0], phones[1]]);
        // nothing but the two all-clears went out after the restart: no SOS, no duplicate
        expect(carrier.outbox.map((m) => m.to).sort()).toEqual([phones[0], phones[1]]);
        expect(carrier.outbox.every((m) => m.idempotencyKey.endsWith(':all_clear'))).toBe(true);
      } finally {
        await v.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.each(['before-incident', 'before-mark'])('a duress "I\'m safe" killed %s (invariant 4)', (point) => {
  const duressFixture = join(process.cwd(), 'test', 'fixtures', 'crash-duress.ts');
  it('the restarted Vigil opens the owed silent SOS once: one duress incident, its text sent, the timer still a plain check-in', async () => {
    const first = await startTestVigil({}, { manualTicks: true });
    const dir = first.dataDir;
    const user = `crash-pin-${point}`;
    let timerId = '';
    try {
      const tok = first.token(user, { name: 'Mara' });
      await first.api(tok, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'A', phone: '+14155550120' }] });
      expect((await first.api(tok, 'PUT', '/v1/me/duress', { pin: '4711' })).status).toBe(200);
      timerId = (await first.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer.id as string;
    } finally {
      await first.stop({ keepData: true });
    }
    try {
      const file = join(dir, 'vigil.db');
      const r = spawnSync(process.execPath, ['--import', 'tsx', duressFixture, file, timerId, user, '4711', point], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.signal).toBe('SIGKILL');
      expect(r.stdout).not.toContain('check-in finished');

      const after = await SqliteStore.open({ file });
      expect(await after.getTimer(timerId)).toMatchObject({ status: 'safe', duressPending: true });
      expect((await after.listIncidents()).filter((i) => i.userId === user)).toHaveLength(point === 'before-incident' ? 0 : 1);
      await after.close();

      const carrier = new ConsoleCarrier({ info() {} });
      const v = await startTestVigil({}, { carrier }, dir);
      try {
        const store = v.vigil.store;
        await eventually(async () => (await store.getTimer(timerId))?.duressPending === undefined, 'the owed SOS opened');
        const sent = await eventually(async () => {
          const mine = (await store.listIncidents()).filter((i) => i.userId === user);
          const ds = await store.deliveriesFor(mine.map((i) => i.id));
          return ds.length === 1 && ds[0]?.status === 'sent' ? { mine, ds } : undefined;
        }, 'the duress SOS text sent');
        expect(sent.mine).toHaveLength(1);
        expect(sent.mine[0]).toMatchObject({ sources: ['duress'], status: 'active' });
        expect(sent.mine[0]?.id.startsWith('drs_')).toBe(true);
        expect(carrier.outbox).toHaveLength(1);
        // the phone's view: a plain check-in
        const own = await v.api(v.token(user), 'GET', `/v1/timers/${timerId}`);
        expect(own.body.timer.status).toBe('safe');
        expect(own.body.timer.incidentId).toBeUndefined();
        expect(JSON.stringify(own.body)).not.toMatch(/duress/i);
      } finally {
        await v.stop({ keepData: true });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
