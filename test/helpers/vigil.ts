/** Start a real in-process Vigil on a temporary data dir and talk to it over HTTP. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { signToken } from '../../src/http/auth.js';
import { startVigil, type Overrides, type Vigil } from '../../src/main.js';

export interface TestVigil {
  vigil: Vigil;
  url: string;
  dataDir: string;
  token(sub: string, opts?: { admin?: boolean; name?: string }): string;
  /** `body` is the parsed JSON answer; typed loosely because tests assert on its shape */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  api(token: string, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

export async function startTestVigil(env: Record<string, string> = {}, overrides: Overrides = {}, dataDir?: string): Promise<TestVigil> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'vigil-it-'));
  const config = loadConfig({
    DATA_DIR: dir,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    TIMER_MIN_SECONDS: '1',
    DELIVERY_BACKOFF_BASE_MS: '50',
    DELIVERY_BACKOFF_CAP_MS: '200',
    ...env,
  });
  const vigil = await startVigil(config, overrides);
  const url = vigil.url;
  return {
    vigil,
    url,
    dataDir: dir,
    token: (sub, o = {}) => signToken(config.jwtSecret, { sub, admin: o.admin, name: o.name }),
    async api(token, method, path, body, headers = {}) {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        /* not JSON: keep the text */
      }
      return { status: res.status, body: parsed };
    },
    async stop(o = {}) {
      await vigil.stop();
      if (!o.keepData) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Poll `fn` until it returns a truthy value or `timeoutMs` passes (then throws with `what`). */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 15_000, everyMs = 100): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
