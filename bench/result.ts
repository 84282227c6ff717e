/** One row of the benchmark table, the goals of the issue, and the printed table. */
import type { SystemName } from './options.js';
import { describe, type Workload } from './workloads.js';

export interface Row {
  workload: string;
  /** what the workload is, in words */
  what: string;
  system: SystemName;
  /** timers (or jobs) measured */
  count: number;
  /** how many of them completed (incident committed / job completed) before the harness gave up */
  completed: number;
  /** lateness = committed − deadline, ms */
  p50Ms?: number;
  p99Ms?: number;
  maxMs?: number;
  /** last commit − last deadline, ms */
  drainMs?: number;
  /** last SOS accepted by the carrier − last deadline, ms; with sent/expected */
  smsDrainMs?: number;
  smsSent?: number;
  smsExpected?: number;
  /** deadline → the SOS on a moderator's socket: per incident the slowest of one socket on each replica, so in a cluster at least two are on a replica that did not escalate it, ms */
  moderator?: Spread;
  /** deadline → each contact's SOS accepted by the fake carrier (its 50 ms answer included), ms; `count` of the expected */
  texts?: Spread & { count: number; expected: number };
  /** highest VmHWM of the system's processes, MB */
  peakRssMb?: number;
  /** highest event-loop delay p99 seen while the workload ran, ms */
  eldP99Ms?: number;
  /** the workload's goal in words, and whether this row meets it (undefined: no goal for this system) */
  goal: string;
  pass?: boolean;
  notes: string[];
  error?: string;
}

export interface Spread {
  p50: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentile of numbers sorted ascending. */
export function percentile(sorted: number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function lateness(values: number[]): Pick<Row, 'p50Ms' | 'p99Ms' | 'maxMs'> {
  const s = [...values].sort((a, b) => a - b);
  return { p50Ms: percentile(s, 50), p99Ms: percentile(s, 99), maxMs: s[s.length - 1] };
}

export function spread(values: number[]): Spread | undefined {
  if (values.length === 0) return undefined;
  const s = [...values].sort((a, b) => a - b);
  return { p50: percentile(s, 50) ?? NaN, p99: percentile(s, 99) ?? NaN, max: s[s.length - 1] ?? NaN };
}

export function emptyRow(w: Workload, system: SystemName): Row {
  return { workload: w.name, what: describe(w), system, count: 0, completed: 0, goal: goalText(w), notes: [] };
}

function goalText(w: Workload): string {
  switch (w.kind) {
    case 'burst':
      return w.sms ? 'all committed ≤ 2 s after deadline' : 'p99 ≤ 150 ms';
    case 'steady':
      return 'p99 ≤ 100 ms';
    case 'checkins':
      return 'all safe, 0 SOS, answer p99 ≤ 100 ms';
    case 'rss':
      return 'flat: big ≤ 1.25 × small';
  }
}

/** Sets `pass` for Vigil rows (BullMQ rows are the comparison, not held to the goal). */
export function judge(w: Workload, row: Row, extra: { checkinsOk?: boolean; rssRatio?: number } = {}): void {
  if (row.system === 'bullmq') return;
  const complete = row.completed === row.count && row.error === undefined;
  switch (w.kind) {
    case 'burst':
      row.pass = complete && (w.sms ? (row.maxMs ?? Infinity) <= 2000 : (row.p99Ms ?? Infinity) <= 150);
      return;
    case 'steady':
      row.pass = complete && (row.p99Ms ?? Infinity) <= 100;
      return;
    case 'checkins':
      row.pass = complete && extra.checkinsOk === true;
      return;
    case 'rss':
      row.pass = row.error === undefined && (extra.rssRatio ?? Infinity) <= 1.25;
      return;
  }
}

/** The SMS row of the issue, derived from the 10k burst (its 20,000 deliveries). */
export function smsRow(burst: Row): Row | undefined {
  if (burst.smsExpected === undefined || burst.system === 'bullmq') return undefined;
  const done = burst.smsSent === burst.smsExpected;
  return {
    ...burst,
    workload: 'sms10k',
    what: `SMS for the burst (${burst.smsExpected.toLocaleString('en-US')} deliveries)`,
    goal: 'all handed to the carrier ≤ 20 s',
    pass: done && (burst.smsDrainMs ?? Infinity) <= 20_000,
    notes: [`${burst.smsSent ?? 0}/${burst.smsExpected} accepted by the fake carrier (50 ms latency)`],
  };
}

const spreadCell = (v: Spread | undefined, suffix = ''): string =>
  v === undefined ? '—' : `${ms(v.p50)} / ${ms(v.p99)} / ${ms(v.max)}${suffix}`;

const ms = (v: number | undefined): string => (v === undefined ? '—' : v >= 10_000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`);

function cells(r: Row): string[] {
  const incomplete = r.completed < r.count ? ` (${r.completed}/${r.count} done)` : '';
  const sms =
    r.smsExpected === undefined ? '—' : `${ms(r.smsDrainMs)}${r.smsSent === r.smsExpected ? '' : ` (${r.smsSent}/${r.smsExpected})`}`;
  const verdict = r.pass === undefined ? '' : r.pass ? 'PASS' : 'FAIL';
  return [
    `${r.workload}: ${r.what}`,
    r.system,
    ms(r.p50Ms),
    ms(r.p99Ms),
    `${ms(r.maxMs)}${incomplete}`,
    ms(r.drainMs),
    sms,
    spreadCell(r.moderator),
    spreadCell(r.texts, r.texts && r.texts.count < r.texts.expected ? ` (${r.texts.count}/${r.texts.expected})` : ''),
    r.peakRssMb === undefined ? '—' : `${r.peakRssMb.toFixed(0)} MB`,
    ms(r.eldP99Ms),
    `${r.goal} ${verdict}`.trim(),
    [r.error ? `error: ${r.error}` : '', ...r.notes].filter(Boolean).join('; '),
  ];
}

/** A Markdown table (readable in a terminal, pasteable into docs/performance.md). */
export function table(rows: Row[]): string {
  const head = [
    'workload',
    'system',
    'p50',
    'p99',
    'max',
    'drain',
    'SMS drain',
    'moderator sees SOS p50/p99/max',
    'contact SOS accepted p50/p99/max',
    'peak RSS',
    'loop p99',
    'goal',
    'notes',
  ];
  const body = rows.map(cells);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (c: string[]) => `| ${c.map((x, i) => x.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}
