/**
 * The workloads of issue "on time at any load", at full or quick (smoke) size. Deadlines
 * are whole seconds from arming (the API takes `durationSeconds`), so "due in one second"
 * means deadlines spread over one second; lateness is measured per timer against its own
 * deadline, so the spread costs nothing.
 */
import type { BenchOptions, WorkloadName } from './options.js';

export type Workload =
  | { name: WorkloadName; kind: 'burst'; count: number; sms: boolean }
  | { name: WorkloadName; kind: 'steady'; rate: number; seconds: number }
  | { name: WorkloadName; kind: 'checkins'; count: number; checkins: number }
  | { name: WorkloadName; kind: 'rss'; small: number; big: number };

/** What each workload is, for the table and docs. */
export function describe(w: Workload): string {
  switch (w.kind) {
    case 'burst':
      return `${w.count.toLocaleString('en-US')} due in one second`;
    case 'steady':
      return `steady ${w.rate.toLocaleString('en-US')} due/s for ${w.seconds} s`;
    case 'checkins':
      return `${w.checkins} check-ins during a ${w.count.toLocaleString('en-US')} burst`;
    case 'rss':
      return `RSS, ${w.big.toLocaleString('en-US')} vs ${w.small.toLocaleString('en-US')} armed`;
  }
}

export function workload(name: WorkloadName, o: Pick<BenchOptions, 'quick' | 'sustain' | 'scale'>): Workload {
  const w = sized(name, o);
  const f = (n: number) => Math.max(1, Math.round(n * o.scale));
  switch (w.kind) {
    case 'burst':
    case 'checkins':
      return w.kind === 'burst' ? { ...w, count: f(w.count) } : { ...w, count: f(w.count), checkins: f(w.checkins) };
    case 'steady':
      return { ...w, rate: f(w.rate) };
    case 'rss':
      return { ...w, big: f(w.big) };
  }
}

function sized(name: WorkloadName, o: Pick<BenchOptions, 'quick' | 'sustain'>): Workload {
  const q = o.quick;
  switch (name) {
    case 'burst1k':
      return { name, kind: 'burst', count: 1000, sms: false };
    case 'burst10k':
      return { name, kind: 'burst', count: q ? 1000 : 10_000, sms: true };
    case 'steady200':
      return { name, kind: 'steady', rate: 200, seconds: q ? 5 : 20 };
    case 'steady1k':
      return { name, kind: 'steady', rate: 1000, seconds: o.sustain ?? (q ? 3 : 20) };
    case 'checkins':
      return { name, kind: 'checkins', count: q ? 1000 : 10_000, checkins: q ? 20 : 200 };
    case 'rss':
      return { name, kind: 'rss', small: 1000, big: q ? 100_000 : 1_000_000 };
  }
}

/** BullMQ runs the timing workloads only (it has no check-ins or store); its jobs send texts and emit the SOS like Vigil. */
export const bullmqRuns = (w: Workload): boolean => w.kind === 'burst' || w.kind === 'steady';
