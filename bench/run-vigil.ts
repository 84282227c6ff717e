/**
 * One timing workload against one Vigil system: start it with the fake carrier, arm through
 * the API, wait for every incident (and, when the workload says so, every SOS at the
 * carrier), then read lateness from the store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { io, type Socket } from 'socket.io-client';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { FakeTwilio } from '../test/helpers/fake-twilio.js';
import { armLeadMs, armTimers, call, people, pool, setContacts, type Armed } from './arm.js';
import { EventLoopSampler, StoreReader, waitUntil } from './measure.js';
import type { BenchOptions } from './options.js';
import { emptyRow, judge, lateness, percentile, spread, type Row } from './result.js';
import { startVigil, type Vigil } from './vigil.js';
import type { Workload } from './workloads.js';

const CARRIER_LATENCY_MS = 50;
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
  const fake = await FakeTwilio.start();
  fake.slow(CARRIER_LATENCY_MS);
  let vigil: Vigil | undefined;
  let reader: StoreReader | undefined;
  let sampler: EventLoopSampler | undefined;
  const moderators: Socket[] = [];
  // incident id → its deadline and when each moderator socket got its SOS (epoch ms)
  const seen = new Map<string, { deadline: number; at: number[] }>();
  try {
    vigil = await startVigil({
      replicas: system === 'replicas3' ? 3 : 1,
      dataDir,
      logLevel: ctx.options.logLevel,
      env: {
        TWILIO_ACCOUNT_SID: fake.accountSid,
        TWILIO_AUTH_TOKEN: fake.authToken,
        TWILIO_FROM: '+15005550006',
        TWILIO_BASE_URL: fake.url,
        ...ctx.options.vigilEnv,
      },
    });
    // as when the console is open: one moderator socket on each replica, for the whole run
    const v0 = vigil;
    await Promise.all(v0.urls.map((url, k) => connectModerator(url, v0.token(`bench-moderator-${k}`, true), k, seen, moderators)));
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
    const smsDone = await waitUntil(() => fake.accepted.length >= expectedSms, Date.now() + Math.max(90_000, expectedSms * 25));
    if (!smsDone) row.notes.push('gave up waiting for the carrier');
    if (w.kind === 'burst' && w.sms) row.smsExpected = expectedSms;
    // and for every moderator socket's SOS (they are pushed right after the commit)
    await waitUntil(() => [...seen.values()].filter((x) => x.at.length === moderators.length).length >= n, Date.now() + 30_000);
    const tapped = await taps;
    row.eldP99Ms = await sampler.stop();
    row.peakRssMb = vigil.peakRssMb();

    const incidents = r.incidents(BURST);
    row.completed = incidents.length;
    Object.assign(row, lateness(incidents.map((i) => i.committed - i.deadline)));
    if (incidents.length) row.drainMs = max(incidents.map((i) => i.committed)) - max(incidents.map((i) => i.deadline));
    const deadlineOf = new Map(armed.map((a) => [a.userId, a.expiresAt]));
    const mod = [...seen.values()].filter((x) => x.at.length === moderators.length).map((x) => max(x.at) - x.deadline);
    row.moderator = spread(mod);
    if (mod.length < n) row.notes.push(`${mod.length}/${n} SOS seen on every moderator socket`);
    // the first message each burst contact got is their SOS; accepted = the carrier's answer (arrival + its latency)
    const firstTo = new Map<string, number>();
    for (const m of fake.accepted) if (!firstTo.has(m.to)) firstTo.set(m.to, m.dateCreated.getTime() + CARRIER_LATENCY_MS);
    const textLate: number[] = [];
    for (const [to, at] of firstTo) {
      const deadline = deadlineOf.get(owners.get(to) ?? '');
      if (deadline !== undefined) textLate.push(at - deadline);
    }
    const ts = spread(textLate);
    if (ts) row.texts = { ...ts, count: textLate.length, expected: expectedSms };
    if (row.smsExpected !== undefined) {
      row.smsSent = fake.accepted.length;
      if (fake.accepted.length) row.smsDrainMs = max(fake.accepted.map((m) => m.dateCreated.getTime())) - last;
    }
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
    for (const m of moderators) m.close();
    await sampler?.stop();
    reader?.close();
    await vigil?.stop();
    await fake.close();
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

/** A moderator's socket on one replica: records, per incident, its deadline and when an SOS for it arrived here. */
async function connectModerator(
  url: string,
  token: string,
  k: number,
  seen: Map<string, { deadline: number; at: number[] }>,
  into: Socket[],
): Promise<void> {
  const m = io(url, { auth: { token }, transports: ['websocket'] });
  into.push(m);
  const got = new Set<string>();
  const onSos = (payload: unknown) => {
    const incident = (payload as { incident?: { id?: string; deadline?: string } } | undefined)?.incident;
    if (!incident?.id || !incident.deadline || got.has(incident.id)) return;
    got.add(incident.id);
    const entry = seen.get(incident.id) ?? { deadline: Date.parse(incident.deadline), at: [] };
    entry.at[entry.at.length] = Date.now();
    seen.set(incident.id, entry);
  };
  // moderators get their events coalesced (`events.batch`); a single `sos.triggered` is handled too
  m.on('events.batch', (batch: { events?: { name: string; payload: unknown }[] }) => {
    for (const e of batch.events ?? []) if (e.name === 'sos.triggered') onSos(e.payload);
  });
  m.on('sos.triggered', onSos);
  await new Promise<void>((resolve, reject) => {
    m.once('ready', () => resolve());
    m.once('connect_error', (err) => reject(new Error(`moderator socket ${k + 1}: ${err.message}`)));
  });
}
