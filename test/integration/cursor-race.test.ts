/**
 * The `since` cursor never skips a change, with writers in other processes on the same
 * SQLite file. A writer that waits on another process's write lock is stamped when it
 * writes, not when it started waiting, so a reader following the cursor meanwhile still
 * sees the change once it commits; records sharing one millisecond across a page
 * boundary are not skipped (keyset on updatedAt, id).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChangePosition } from '../../src/app/cursor.js';
import { SmsBudget } from '../../src/app/sms-budget.js';
import { TimerService } from '../../src/app/timers.js';
import { makeLimits } from '../../src/domain/limits.js';
import type { Timer } from '../../src/domain/timer.js';
import { createMetrics } from '../../src/metrics.js';
import { tempSqliteStore } from '../helpers/sqlite-store.js';

const fixture = join(process.cwd(), 'test', 'fixtures', 'sqlite-writer.ts');

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups.length = 0;
});

async function world(opts: { clock?: () => number } = {}) {
  const { store, file, cleanup } = await tempSqliteStore(opts);
  cleanups.push(cleanup);
  const metrics = createMetrics({ replica: 'cursor', collectDefault: false });
  const timers = new TimerService(
    store,
    { publish: () => undefined },
    makeLimits({ minSeconds: 1, maxSeconds: 86_400, maxExtensions: 10, maxTotalSeconds: 172_800 }),
    metrics,
    new SmsBudget(store, { maxPerIncident: 10, maxPerUserPerDay: 10 }),
  );
  return { file, store, timers };
}

/** A child process running the fixture; `line(prefix)` waits for its next line starting so. */
function child(args: string[]) {
  const p: ChildProcessWithoutNullStreams = spawn(process.execPath, ['--import', 'tsx', fixture, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  cleanups.push(() => void (p.exitCode === null && p.kill('SIGKILL')));
  const lines: string[] = [];
  const waiting: (() => void)[] = [];
  let stderr = '';
  p.stderr.on('data', (c: Buffer) => void (stderr += c.toString('utf8')));
  createInterface({ input: p.stdout }).on('line', (l) => {
    lines.push(l);
    for (const w of waiting.splice(0)) w();
  });
  const exited = new Promise<void>((resolve) => p.once('exit', () => (resolve(), waiting.splice(0).forEach((w) => w()))));
  return {
    async line(prefix: string, timeoutMs = 30_000): Promise<string> {
      const giveUp = Date.now() + timeoutMs;
      for (;;) {
        const i = lines.findIndex((l) => l.startsWith(prefix));
        if (i >= 0) return lines.splice(i, 1)[0] as string;
        if (p.exitCode !== null) throw new Error(`fixture exited (${p.exitCode}) before "${prefix}": ${stderr}`);
        if (Date.now() > giveUp) throw new Error(`no "${prefix}" from the fixture within ${timeoutMs} ms: ${stderr}`);
        await Promise.race([new Promise<void>((r) => waiting.push(r)), sleep(100)]);
      }
    },
    send: (l: string) => p.stdin.write(`${l}\n`),
    exited,
  };
}

describe('the since cursor with a writer in another process', () => {
  it('never skips a change: a write that waited on another process’s lock is seen after it commits', async () => {
    const { file, store, timers } = await world();
    const now = await store.now();
    const armed = await store.armTimer({ id: 'tmr_race', userId: 'alice', startedAt: now, expiresAt: new Date(now.getTime() + 3_600_000) });
    if (armed.kind !== 'created') throw new Error(armed.kind);

    const seen: Timer[] = [];
    let cursor: ChangePosition = (await timers.list('alice', {})).cursor;
    const poll = async () => {
      const r = await timers.list('alice', { since: cursor });
      seen.push(...r.timers);
      cursor = r.cursor;
    };

    const writer = child([file, 'extend', 'tmr_race', 'alice']);
    await writer.line('ready');
    const locker = child([file, 'hold-lock']);
    await locker.line('locked');
    writer.send('go');
    const calledAt = Number((await writer.line('calling ')).split(' ')[1]);

    // follow the cursor until it has moved past the moment the writer started waiting
    const giveUp = Date.now() + 15_000;
    while (cursor.since.getTime() <= calledAt + 50) {
      if (Date.now() > giveUp) throw new Error('the cursor did not move past the writer');
      await poll();
      await sleep(20);
    }
    expect(seen.filter((t) => t.extensions > 0)).toEqual([]);

    locker.send('release');
    await locker.line('released');
    const done = await writer.line('done ');
    expect(done).not.toBe('done refused');
    await writer.exited;

    await poll();
    const extended = seen.filter((t) => t.id === 'tmr_race' && t.extensions === 1);
    expect(extended).toHaveLength(1);
    expect(extended[0]?.updatedAt.getTime()).toBeGreaterThan(calledAt + 50);
  }, 60_000);

  it('records sharing one millisecond across a page boundary are all returned', async () => {
    let t = Date.now();
    const { store, timers } = await world({ clock: () => t });
    // five changes stamped in the same millisecond (the store's clock stands still)
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await store.armTimer({ id: `tmr_same_${i}`, userId: 'bob', startedAt: new Date(t), expiresAt: new Date(t + 3_600_000) });
      if (r.kind !== 'created') throw new Error(r.kind);
      await store.resolveTimer(r.timer.id, 'bob', 'cancelled');
      ids.push(r.timer.id);
    }
    const stamps = new Set((await store.listTimers('bob')).map((x) => x.updatedAt.getTime()));
    expect(stamps.size).toBe(1);
    // the clock moves on past the change lag, so those changes have settled
    t += store.changeLagMs() + 1;

    const seen = new Set<string>();
    let cursor: ChangePosition = { since: new Date(t - 60_000) };
    for (let page = 0; ; page++) {
      expect(page).toBeLessThan(10);
      const r = await timers.list('bob', { since: cursor, limit: 2 });
      for (const x of r.timers) seen.add(x.id);
      cursor = r.cursor;
      if (!r.more) break;
    }
    expect([...seen].sort()).toEqual(ids.sort());
  });
});
