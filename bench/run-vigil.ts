/**
 * One timing workload against one Vigil system: start it with the fake carrier, arm through
 * the API, wait for every incident (and, when the workload says so, every SOS at the
 * carrier), then read lateness from the store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { armLeadMs, armTimers, call, people, pool, setContacts, type Armed } from './arm.js';
import { Carrier } from './carrier.js';
import { EventLoopSampler, StoreReader, waitUntil } from './measure.js';
import { Moderators } from './moderator.js';
import type { BenchOptions } from './options.js';
import { emptyRow, judge, lateness, percentile, type Row } from './result.js';
import { startVigil, type Vigil } from './vigil.js';
import type { Workload } from './workloads.js';

const BURST = 'burst-';
const SAFE = 'safe-';
// reduce, not spread: a 60 s steady run has 60,000 values
const max = (xs: number[]) => xs.reduce((a, b) => Math.max(a, b), -Infinity);
const min = (xs: number[]) => xs.reduce((a, b) => Math.min(a, b), Infinity);

export interface RunContext {
  options: BenchOptions;
  /** the folder under which each run gets its own DATA_DIR */
  root: string;
  log(line: string): void;
}

export async function runVigilTiming(w: Workload, system: 'embedded' | 'replicas3', ctx: RunContext): Promise<Row> {
  if (w.kind === 'rss') throw new Error('rss is run by runRss');
  const row = emptyRow(w, system);
  const dataDir = mkdtempSync(join(ctx.root, `${w.name}-${system}-`));
  const carrier = await Carrier.start();
  const moderators = new Moderators();
  let vigil: Vigil | undefined;
  let reader: StoreReader | undefined;
  let sampler: EventLoopSampler | undefined;
  try {
    vigil = await startVigil({
      replicas: system === 'replicas3' ? 3 : 1,
      dataDir,
      logLevel: ctx.options.logLevel,
      env: {
        TWILIO_ACCOUNT_SID: carrier.account.accountSid,
        TWILIO_AUTH_TOKEN: carrier.account.authToken,
        TWILIO_FROM: carrier.account.from,
        TWILIO_BASE_URL: carrier.account.url,
        ...ctx.options.vigilEnv,
      },
    });
    // as when the console is open: one moderator socket on each replica, for the whole run
    const v0 = vigil;
    await Promise.all(v0.urls.map((url, k) => moderators.connect(url, v0.token(`bench-moderator-${k}`, true))));
    const n = w.kind === 'steady' ? w.rate * w.seconds : w.count;
    const checkins = w.kind === 'checkins' ? w.checkins : 0;
    row.count = n;
    const burst = people(vigil, BURST, n);
    const safe = people(vigil, SAFE, checkins);
    const owners = new Map<string, string>();
    const rate = await setContacts(vigil, [...burst, ...safe], owners);
    // every timer armed before the first deadline, steady runs too (as BullMQ adds its jobs up front): the
    // figures are the engine's, not arming traffic's (an earlier harness overlapped them and said so in the notes)
    const lead = armLeadMs(n + checkins, rate);
    const t0 = Date.now() + lead;
    const targets = burst.map((_, i) => (w.kind === 'steady' ? t0 + (i * 1000) / w.rate : t0));
    ctx.log(
      `  ${n + checkins} people with 2 contacts (${rate.toFixed(0)} req/s); arming, first deadline in ~${(lead / 1000).toFixed(0)} s`,
    );
    const armed = await armTimers(vigil, burst, targets);
    // check-in people fall due 1–3 s after the burst, while it escalates, and tap 1 s before
    // spread over the 2 s for real: each arm request is timed so its whole-second duration lands on the target
    const safeArmed = await armTimers(
      vigil,
      safe,
      safe.map((_, j) => t0 + 1000 + (j / Math.max(1, checkins)) * 2000),
      { exact: true },
    );
    const deadlines = armed.map((a) => a.expiresAt);
    const first = min(deadlines);
    const last = max(deadlines);
    if (Date.now() > first - 1000)
      row.notes.push(`arming ended ${Date.now() - first + 1000} ms late; the first deadlines fell during arming`);
    await sleep(Math.max(0, first - 1000 - Date.now()));
    const v = vigil;
    sampler = new EventLoopSampler(() => v.scrapeEventLoop());
    const taps = tapSafe(vigil, safeArmed);
    taps.catch(() => undefined); // awaited below; an early error must not leave it unhandled

    reader = new StoreReader(vigil.sqliteFile);
    const r = reader;
    const cpuBefore = vigil.cpuMs();
    const incidentsDone = await waitUntil(() => r.count(BURST) >= n, last + Math.max(120_000, n * 20));
    if (!incidentsDone) row.notes.push('gave up waiting for incidents');
    // CPU the replicas spent from 1 s before the first deadline until every incident was seen (the poll adds
    // up to its own interval): a figure a busy machine does not inflate the way it inflates lateness
    row.notes.push(`CPU until all committed ${Math.round(vigil.cpuMs() - cpuBefore)} ms`);
    const expectedSms = 2 * n;
    // every workload waits for its texts: the contact's figure is the one people feel
    await carrier.waitFor(expectedSms, row);
    if (w.kind === 'burst' && w.sms) row.smsExpected = expectedSms;
    // and for every moderator socket's SOS (they are pushed right after the commit)
    await moderators.waitFor(n, Date.now() + 30_000);
    const tapped = await taps;
    row.eldP99Ms = await sampler.stop();
    row.peakRssMb = vigil.peakRssMb();

    const incidents = r.incidents(BURST);
    row.completed = incidents.length;
    Object.assign(row, lateness(incidents.map((i) => i.committed - i.deadline)));
    if (incidents.length) row.drainMs = max(incidents.map((i) => i.committed)) - max(incidents.map((i) => i.deadline));
    const deadlineOf = new Map(armed.map((a) => [a.userId, a.expiresAt]));
    moderators.figures(row, n);
    carrier.figures(row, expectedSms, (to) => deadlineOf.get(owners.get(to) ?? ''), last);
    if (w.kind === 'checkins') {
      const statuses = r.timerStatuses(SAFE);
      const sos = r.count(SAFE);
      const answers = tapped.filter((t) => t.ok).map((t) => t.ms);
      const sorted = [...answers].sort((a, b) => a - b);
      const p99 = percentile(sorted, 99);
      row.notes.push(
        `${statuses.safe ?? 0}/${checkins} safe, ${sos} SOS, answers ${answers.length}/${checkins} ok, ` +
          `p50 ${Math.round(percentile(sorted, 50) ?? NaN)} ms, p99 ${Math.round(p99 ?? NaN)} ms`,
      );
      judge(w, row, { checkinsOk: statuses.safe === checkins && sos === 0 && answers.length === checkins && (p99 ?? Infinity) <= 100 });
    } else judge(w, row);
  } catch (err) {
    row.error = err instanceof Error ? err.message.split('\n')[0] : String(err);
    judge(w, row);
  } finally {
    moderators.close();
    await sampler?.stop();
    reader?.close();
    await vigil?.stop();
    await carrier.close();
    if (!ctx.options.keep) rmSync(dataDir, { recursive: true, force: true });
  }
  return row;
}

/** Each check-in person taps "I'm safe" 1 s before their deadline; how long each answer took. */
async function tapSafe(vigil: Vigil, armed: Armed[]): Promise<{ ok: boolean; ms: number }[]> {
  return pool(armed, armed.length || 1, async (a, i) => {
    await sleep(Math.max(0, a.expiresAt - 1000 - Date.now()));
    const t = performance.now();
    const r = await call(vigil, i, a.token, 'POST', `/v1/timers/${a.timerId}/safe`);
    const ms = performance.now() - t;
    const status = (r.body as { timer?: { status?: string } } | undefined)?.timer?.status;
    return { ok: r.status === 200 && status === 'safe', ms };
  });
}
