/**
 * The benchmark's own arithmetic (bench/): percentiles, the event-loop metric it
 * scrapes, sizes and goals. The benchmark runs are not tests; these pure parts are.
 */
import { describe, expect, it } from 'vitest';
import { eventLoopP99Ms } from '../../bench/measure.js';
import { parseOptions } from '../../bench/options.js';
import { Carrier, CARRIER_LATENCY_MS } from '../../bench/carrier.js';
import { emptyRow, judge, lateness, percentile, smsRow, spread } from '../../bench/result.js';
import { workload } from '../../bench/workloads.js';

describe('bench harness', () => {
  it('takes nearest-rank percentiles', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 99)).toBe(99);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeUndefined();
    expect(lateness([30, 10, 20])).toEqual({ p50Ms: 20, p99Ms: 30, maxMs: 30 });
  });

  it('reads the event-loop delay from the service metric, else from prom-client', () => {
    const own =
      'vigil_event_loop_delay_seconds{replica="r1",stat="p50"} 0.001\nvigil_event_loop_delay_seconds{replica="r1",stat="p99"} 0.012\n';
    const fallback = '# HELP x\nvigil_nodejs_eventloop_lag_p99_seconds{replica="r1"} 0.25\n';
    expect(eventLoopP99Ms(own + fallback)).toBeCloseTo(12);
    expect(eventLoopP99Ms(fallback)).toBeCloseTo(250);
    expect(eventLoopP99Ms('')).toBeUndefined();
  });

  it('sizes workloads: quick, scale and sustain', () => {
    const o = parseOptions(['--quick', '--scale', '0.5', '--sustain', '60', '--env', 'SWEEP_CRON=*/5 * * * * *'], {});
    expect(o.vigilEnv).toEqual({ SWEEP_CRON: '*/5 * * * * *' });
    expect(workload('burst10k', o)).toMatchObject({ kind: 'burst', count: 500, sms: true });
    expect(workload('steady1k', o)).toMatchObject({ kind: 'steady', rate: 500, seconds: 60 });
    expect(workload('rss', parseOptions([], {}))).toMatchObject({ small: 1000, big: 1_000_000 });
    expect(parseOptions(['--workloads', 'sms10k'], {}).workloads).toEqual(['burst10k']);
    expect(() => parseOptions(['--systems', 'kafka'], {})).toThrow(/unknown system "kafka"/);
  });

  it('judges the goals; an incomplete run fails', () => {
    const w = workload('burst10k', parseOptions([], {}));
    const row = { ...emptyRow(w, 'embedded'), count: 10, completed: 10, maxMs: 1900, smsExpected: 20, smsSent: 20, smsDrainMs: 19_000 };
    judge(w, row);
    expect(row.pass).toBe(true);
    expect(smsRow(row)?.pass).toBe(true);
    const short = { ...row, completed: 9 };
    judge(w, short);
    expect(short.pass).toBe(false);
    expect(smsRow({ ...row, smsSent: 19 })?.pass).toBe(false);
    const bull = { ...emptyRow(w, 'bullmq'), maxMs: 99_999 };
    judge(w, bull);
    expect(bull.pass).toBeUndefined();
  });

  it("times each contact's SOS from their first message: accepted = arrival + the carrier's latency; other numbers are not counted", async () => {
    const carrier = await Carrier.start();
    try {
      const w = workload('burst10k', parseOptions(['--quick'], {}));
      const row = emptyRow(w, 'embedded');
      row.smsExpected = 3;
      const at = (ms: number) => new Date(10_000 + ms);
      const msg = (to: string, ms: number) => ({
        sid: `SM${to}${ms}`,
        to,
        body: 'x',
        dateCreated: at(ms),
        dateSent: at(ms),
        status: 'queued' as const,
      });
      // +1 gets its SOS at 100 ms and a later text (not its SOS); +2 at 300 ms; +9 is nobody of the workload
      carrier.fake.accepted.push(msg('+1', 100), msg('+2', 300), msg('+1', 900), msg('+9', 50));
      const deadlines: Record<string, number> = { '+1': 10_000, '+2': 10_000 };
      carrier.figures(row, 4, (to) => deadlines[to], 10_000);
      expect(row.texts).toEqual({
        p50: 100 + CARRIER_LATENCY_MS,
        p99: 300 + CARRIER_LATENCY_MS,
        max: 300 + CARRIER_LATENCY_MS,
        count: 2,
        expected: 4,
      });
      expect(row.smsSent).toBe(4);
      expect(row.smsDrainMs).toBe(900);
    } finally {
      await carrier.close();
    }
  });

  it('spreads figures as p50 / p99 / max, none for no values', () => {
    expect(spread([5, 1, 3])).toEqual({ p50: 3, p99: 5, max: 5 });
    expect(spread([])).toBeUndefined();
  });
});
