/**
 * Debian's Prometheus for tests (`apt-get install prometheus`: /usr/bin/prometheus and
 * /usr/bin/promtool): whether they can run here, and a throwaway server on a loopback port
 * with its own storage directory.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { onFreePort, spawnService } from './service-process.js';

export const PROMTOOL = '/usr/bin/promtool';
export const PROMETHEUS = '/usr/bin/prometheus';

const runs = (bin: string) => {
  const r = spawnSync(bin, ['--version'], { stdio: 'ignore', timeout: 10_000 });
  return r.error === undefined && r.status === 0;
};

/** A message naming what is missing, or undefined when promtool runs. */
export function promtoolMissing(): string | undefined {
  return runs(PROMTOOL) ? undefined : `promtool not runnable at ${PROMTOOL}`;
}

/** A message naming what is missing, or undefined when prometheus runs. */
export function prometheusMissing(): string | undefined {
  return runs(PROMETHEUS) ? undefined : `prometheus not runnable at ${PROMETHEUS}`;
}

export interface PromResult {
  status: 'success' | 'error';
  errorType?: string;
  error?: string;
  data?: { resultType: string; result: { metric: Record<string, string>; value?: [number, string]; values?: [number, string][] }[] };
}

export interface TestPrometheus {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** GET an API path (e.g. `/api/v1/query?query=…`) and parse the JSON answer, errors included. */
  api(path: string): Promise<PromResult>;
  /** Range query over the last `seconds`, step 1 s, as a Grafana time-series panel asks. */
  queryRange(expr: string, seconds: number): Promise<PromResult>;
  query(expr: string): Promise<PromResult>;
  stop(): Promise<void>;
}

/**
 * A real Prometheus on a free loopback port with its own storage in `dir`, scraping
 * `targets` (host:port) as job `job` every second (with `bearerToken`, if given) and
 * evaluating `ruleFiles` every second.
 */
export async function startPrometheus(o: {
  dir: string;
  job: string;
  targets: string[];
  ruleFiles: string[];
  /** sent as `Authorization: Bearer <this>` with every scrape (METRICS_TOKEN) */
  bearerToken?: string;
}): Promise<TestPrometheus> {
  const missing = prometheusMissing();
  if (missing) throw new Error(`${missing}: cannot start a test Prometheus`);
  const config = join(o.dir, 'prometheus.yml');
  writeFileSync(
    config,
    stringify({
      global: { scrape_interval: '1s', scrape_timeout: '900ms', evaluation_interval: '1s' },
      rule_files: o.ruleFiles,
      scrape_configs: [
        {
          job_name: o.job,
          metrics_path: '/metrics',
          static_configs: [{ targets: o.targets }],
          ...(o.bearerToken === undefined ? {} : { authorization: { type: 'Bearer', credentials: o.bearerToken } }),
        },
      ],
    }),
  );
  return onFreePort('prometheus', async (port) => {
    const url = `http://127.0.0.1:${port}`;
    const proc = await spawnService({
      name: 'prometheus',
      bin: PROMETHEUS,
      args: [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(o.dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      port,
      probe: (p) =>
        fetch(`http://127.0.0.1:${p}/-/ready`, { signal: AbortSignal.timeout(1_000) })
          .then((r) => r.ok)
          .catch(() => false),
      readyWhat: 'answer /-/ready',
      readyTimeoutMs: 30_000,
      stopTimeoutMs: 10_000,
    });
    const api = async (path: string): Promise<PromResult> => {
      const res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(10_000) });
      return (await res.json()) as PromResult;
    };
    return {
      url,
      api,
      query: (expr) => api(`/api/v1/query?query=${encodeURIComponent(expr)}`),
      queryRange(expr, seconds) {
        const end = Date.now() / 1000;
        return api(`/api/v1/query_range?query=${encodeURIComponent(expr)}&start=${end - seconds}&end=${end}&step=1`);
      },
      stop: () => proc.stop(),
    };
  });
}
