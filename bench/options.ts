/**
 * Command line of `npm run bench`: which workloads and systems, quick sizes, the steady
 * run's length, extra Vigil environment, and where to write JSON. Each option can also be
 * given by environment (BENCH_WORKLOADS, BENCH_SYSTEMS, BENCH_QUICK=1, BENCH_SCALE, BENCH_SUSTAIN, BENCH_JSON).
 */
import { parseArgs } from 'node:util';

export const WORKLOAD_NAMES = ['burst1k', 'burst10k', 'steady200', 'steady1k', 'checkins', 'rss'] as const;
export type WorkloadName = (typeof WORKLOAD_NAMES)[number];
export const SYSTEM_NAMES = ['embedded', 'replicas3', 'bullmq'] as const;
export type SystemName = (typeof SYSTEM_NAMES)[number];

export interface BenchOptions {
  workloads: WorkloadName[];
  systems: SystemName[];
  quick: boolean;
  /** multiplies every workload's size (counts and rates) after --quick, e.g. 0.1 for a tiny run */
  scale: number;
  /** seconds of the steady 1,000/s run (default 20) */
  sustain?: number;
  json?: string;
  /** extra environment for every Vigil process (`--env SWEEP_CRON='*\/5 * * * * *'`) */
  vigilEnv: Record<string, string>;
  /** LOG_LEVEL of the Vigil processes (their stdout goes to a file in the run folder) */
  logLevel: string;
  /** keep the run folders (SQLite files, logs) instead of deleting them */
  keep: boolean;
}

const USAGE = `usage: npm run bench -- [--quick] [--workloads ${WORKLOAD_NAMES.join(',')}] [--systems ${SYSTEM_NAMES.join(',')}]
       [--scale 0.1] [--sustain 60] [--json out.json] [--env KEY=VALUE ...] [--log-level warn] [--keep]
  sms10k is an alias of burst10k (its 20,000 deliveries are the SMS row)`;

function list<T extends string>(raw: string | undefined, all: readonly T[], what: string, alias: Record<string, T> = {}): T[] {
  if (raw === undefined || raw.trim() === '' || raw === 'all') return [...all];
  const out: T[] = [];
  for (const part of raw.split(',').map((s) => s.trim())) {
    const name = alias[part] ?? part;
    if (!(all as readonly string[]).includes(name)) throw new Error(`unknown ${what} "${part}"\n${USAGE}`);
    if (!out.includes(name as T)) out.push(name as T);
  }
  return out;
}

export function parseOptions(argv: string[], env: Record<string, string | undefined>): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      workloads: { type: 'string' },
      systems: { type: 'string' },
      sustain: { type: 'string' },
      scale: { type: 'string' },
      json: { type: 'string' },
      env: { type: 'string', multiple: true },
      'log-level': { type: 'string', default: 'warn' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const vigilEnv: Record<string, string> = {};
  for (const pair of values.env ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--env wants KEY=VALUE, got "${pair}"\n${USAGE}`);
    vigilEnv[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const sustainRaw = values.sustain ?? env.BENCH_SUSTAIN;
  const sustain = sustainRaw === undefined ? undefined : Number(sustainRaw);
  if (sustain !== undefined && !(Number.isInteger(sustain) && sustain > 0)) throw new Error(`--sustain wants whole seconds\n${USAGE}`);
  const scale = Number(values.scale ?? env.BENCH_SCALE ?? 1);
  if (!(scale > 0 && scale <= 10)) throw new Error(`--scale wants a factor in (0, 10]\n${USAGE}`);
  return {
    workloads: list(values.workloads ?? env.BENCH_WORKLOADS, WORKLOAD_NAMES, 'workload', { sms10k: 'burst10k' }),
    systems: list(values.systems ?? env.BENCH_SYSTEMS, SYSTEM_NAMES, 'system'),
    quick: values.quick || env.BENCH_QUICK === '1',
    scale,
    sustain,
    json: values.json ?? env.BENCH_JSON,
    vigilEnv,
    logLevel: values['log-level'],
    keep: values.keep,
  };
}
