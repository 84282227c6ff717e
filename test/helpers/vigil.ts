/** Start a real in-process Vigil on a temporary data dir and talk to it over HTTP. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { signToken } from '../../src/auth/tokens.js';
import { startVigil, type Overrides, type Vigil } from '../../src/main.js';
import { requestJson, type ApiAnswer } from './http.js';
import { GENEROUS_LIMITS } from './limits.js';
import { withinMs } from './deadline.js';

export interface TestVigil {
  vigil: Vigil;
  url: string;
  dataDir: string;
  token(sub: string, opts?: { admin?: boolean; name?: string }): string;
  api(token: string, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiAnswer>;
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

/** Ticks run as in production unless `manualTicks` (the test then sweeps and dispatches by hand). */
export async function startTestVigil(
  env: Record<string, string> = {},
  { manualTicks = false, ...overrides }: Overrides & { manualTicks?: boolean } = {},
  dataDir?: string,
): Promise<TestVigil> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'vigil-it-'));
  const config = loadConfig({
    DATA_DIR: dir,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    TIMER_MIN_SECONDS: '1',
    DELIVERY_BACKOFF_BASE_MS: '50',
    DELIVERY_BACKOFF_CAP_MS: '200',
    // tests make many requests from one address and one token; the limits have their own tests
    ...GENEROUS_LIMITS,
    ...env,
  });
  const vigil = await startVigil(config, overrides);
  if (!manualTicks) vigil.startTicks();
  const url = vigil.url;
  return {
    vigil,
    url,
    dataDir: dir,
    token: (sub, o = {}) => signToken(config.jwtSecret ?? '', { sub, admin: o.admin, name: o.name }),
    api: (token, method, path, body, headers) => requestJson(`${url}${path}`, token, method, body, headers),
    async stop(o = {}) {
      await vigil.stop();
      if (!o.keepData) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Poll `fn` until it returns a truthy value or `timeoutMs` passes (then throws with `what`).
 * An attempt that has not returned by the deadline fails the wait too: a query that hangs
 * ends in this message, not in the test runner's timeout.
 */
export async function eventually<T>(
  fn: () => Promise<T | undefined | null | false>,
  what: string,
  timeoutMs = 15_000,
  everyMs = 100,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await withinMs(fn(), Math.max(until - Date.now(), 0) + everyMs, 'an attempt');
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Until the system clock (the embedded store's clock) is strictly after `t`: for a test
 * that needs a deadline or a timestamp behind it when the process under test keeps its
 * own clock. Waits for exactly that long, no fixed margin.
 */
export async function untilPast(t: Date | string, what = `the clock to pass ${String(t)}`): Promise<void> {
  const ms = new Date(t).getTime();
  if (Number.isNaN(ms)) throw new Error(`not a time: ${String(t)}`);
  await eventually(async () => Date.now() > ms, what, Math.max(15_000, ms - Date.now() + 15_000), 1);
}
