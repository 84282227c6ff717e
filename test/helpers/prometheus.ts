/**
 * Debian's Prometheus for tests (`apt-get install prometheus`: /usr/bin/prometheus and
 * /usr/bin/promtool): whether they can run here, and a throwaway server on a loopback port
 * with its own storage directory.
 */
import { spawnSync } from 'node:child_process';

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
