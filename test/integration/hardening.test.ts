/**
 * Client mistakes are 4xx with the JSON error shape (never a 500, never a stack), logged at
 * info; security headers; the console served from a dot-directory; bounded route labels.
 */
import { request as httpRequest } from 'node:http';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleRouter } from '../../src/console/router.js';
import { errorHandler } from '../../src/http/errors.js';
import { createLogger } from '../../src/log.js';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A request exactly as written (fetch would refuse or rewrite some of these). */
function raw(url: string, o: { method?: string; path: string; headers?: Record<string, string>; body?: Buffer | string }): Promise<Raw> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: u.hostname, port: u.port, method: o.method ?? 'GET', path: o.path, headers: o.headers ?? {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

function expectErrorShape(r: Raw, status: number, code?: string) {
  expect(r.status, r.text).toBe(status);
  const body = JSON.parse(r.text) as { error: { code: string; message: string } };
  expect(body).toEqual({ error: { code: code ?? expect.any(String), message: expect.any(String) } });
  expect(r.text).not.toMatch(/\bat .*\.(ts|js):\d+/); // no stack frames
}

const lines: string[] = [];
let v: TestVigil;
let token: string;

beforeAll(async () => {
  const logger = createLogger({ level: 'info' }, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString('utf8')), cb()) }));
  v = await startTestVigil({}, { manualTicks: true, logger });
  token = v.token('hardening-user');
});
afterAll(async () => {
  await v?.stop();
});

const auth = () => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
const errorsLogged = () => lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level >= 50);

describe('client mistakes are 4xx, never 500', () => {
  const corrupt = Buffer.from('this is not compressed at all, not even a little');
  for (const encoding of ['gzip', 'deflate', 'br']) {
    it(`a corrupt ${encoding} body is 400 on the API and on the Twilio webhooks (receipts, replies)`, async () => {
      const api = await raw(v.url, {
        method: 'POST',
        path: '/v1/timers',
        headers: { ...auth(), 'content-encoding': encoding },
        body: corrupt,
      });
      expectErrorShape(api, 400);
      for (const path of ['/v1/receipts/twilio', '/v1/replies/twilio']) {
        const hook = await raw(v.url, {
          method: 'POST',
          path,
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': encoding },
          body: corrupt,
        });
        expectErrorShape(hook, 400);
      }
    });
  }

  it('a well-formed gzip or br body is read as usual', async () => {
    const body = JSON.stringify({ durationSeconds: 600 });
    const gz = await raw(v.url, {
      method: 'POST',
      path: '/v1/timers',
      headers: { ...auth(), 'content-encoding': 'gzip' },
      body: gzipSync(body),
    });
    expect(gz.status, gz.text).toBe(201);
    // one running timer per person: another person for the second
    const br = await raw(v.url, {
      method: 'POST',
      path: '/v1/timers',
      headers: { ...auth(), authorization: `Bearer ${v.token('hardening-br')}`, 'content-encoding': 'br' },
      body: brotliCompressSync(body),
    });
    expect(br.status, br.text).toBe(201);
  });

  it('an unsupported Content-Encoding is 415 unsupported_encoding', async () => {
    const r = await raw(v.url, { method: 'POST', path: '/v1/timers', headers: { ...auth(), 'content-encoding': 'compress' }, body: 'x' });
    expectErrorShape(r, 415, 'unsupported_encoding');
  });

  it('a body over BODY_LIMIT is 413 body_too_large', async () => {
    const r = await raw(v.url, {
      method: 'POST',
      path: '/v1/timers',
      headers: auth(),
      body: JSON.stringify({ durationSeconds: 60, locationName: 'x'.repeat(40_000) }),
    });
    expectErrorShape(r, 413, 'body_too_large');
  });

  it('a malformed % escape in a path parameter is 400', async () => {
    for (const path of ['/v1/timers/%zz', '/v1/timers/%E0%A4%A/safe', '/v1/admin/incidents/%/ack', '/console/%c0']) {
      const r = await raw(v.url, { method: path.endsWith('ack') || path.endsWith('safe') ? 'POST' : 'GET', path, headers: auth() });
      expect([400, 403, 404], `${path} ${r.status} ${r.text}`).toContain(r.status);
      expect(() => JSON.parse(r.text) as unknown, `${path}: ${r.text}`).not.toThrow();
      expect(r.text).not.toMatch(/\bat .*\.(ts|js):\d+/);
    }
    expectErrorShape(await raw(v.url, { path: '/v1/timers/%zz', headers: auth() }), 400, 'bad_request');
  });

  it('none of the mistakes above was logged as an error', () => {
    expect(errorsLogged()).toEqual([]);
    expect(lines.some((l) => l.includes('"msg":"client error"'))).toBe(true);
  });
});

describe('names that go into texts', () => {
  it('refuses control, bidi and invisible characters in a place or contact name with a clear 400, and writes nothing', async () => {
    const t = v.token('hardening-names');
    for (const locationName of ['Blue\u202eBottle', 'Caf\u00e9\u0007', 'a\u2066b', 'x\u200by', 'line\u2028break']) {
      const r = await v.api(t, 'POST', '/v1/timers', { durationSeconds: 600, locationName });
      expect(r.status, JSON.stringify(locationName)).toBe(400);
      expect(r.body.error.code).toBe('validation_failed');
      expect(r.body.error.details.issues[0].message).toMatch(/control characters, bidi controls/);
    }
    const c = await v.api(t, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Mum\u202e', phone: '+14155550100' }] });
    expect(c.status).toBe(400);
    expect((await v.api(t, 'GET', '/v1/timers')).body.timers).toEqual([]);
    expect((await v.api(t, 'GET', '/v1/me/contacts')).body.contacts).toEqual([]);
  });

  it('accepts names in any script, emoji sequences with joiners, and dotted names (defanged in texts)', async () => {
    for (const [i, locationName] of ['کافه\u200cنادری', 'Zoë & Ødegård', '👩\u200d👩\u200d👧 park', 'cafe.com'].entries()) {
      const r = await v.api(v.token(`hardening-script-${i}`), 'POST', '/v1/timers', { durationSeconds: 600, locationName });
      expect(r.status, locationName).toBe(201);
    }
  });
});

describe('headers', () => {
  it('API answers are never cached and never sniffed', async () => {
    const r = await raw(v.url, { path: '/v1/me/contacts', headers: auth() });
    expect(r.status).toBe(200);
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    const refused = await raw(v.url, { path: '/v1/me/contacts' });
    expect(refused.headers['cache-control']).toBe('no-store');
  });

  it("the console's CSP lets it connect to its own origin only", async () => {
    const r = await raw(v.url, { path: '/console/' });
    const csp = String(r.headers['content-security-policy']);
    expect(csp).toMatch(/connect-src 'self'(;|$)/);
    expect(csp).not.toMatch(/ws:|wss:/);
  });
});

describe('the console installed under a dot-directory', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'vigil-dot-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves /console/ and its assets from ~/.cache/… (send refuses dot segments in an absolute path)', async () => {
    const staticDir = join(dir, '.cache', 'npx', 'vigil', 'dist', 'console', 'static');
    mkdirSync(staticDir, { recursive: true });
    cpSync(join(import.meta.dirname, '..', '..', 'src', 'console', 'static'), staticDir, { recursive: true });
    writeFileSync(join(staticDir, 'console.js'), '/* built console */\n');
    const app = express();
    app.use('/console', consoleRouter({ staticDir }));
    app.use(errorHandler(createLogger({ level: 'silent' })));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const addr = server.address();
    const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    try {
      const index = await raw(url, { path: '/console/' });
      expect(index.status, index.text).toBe(200);
      expect(index.text).toContain('<html');
      expect((await raw(url, { path: '/console/console.js' })).status).toBe(200);
      expect((await raw(url, { path: '/console/socket.io.min.js' })).status).toBe(200);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('metric labels', () => {
  it('1,000 requests with random casing and paths add a bounded number of route series', async () => {
    const series = async () =>
      (await v.vigil.metrics.registry.getSingleMetric('vigil_http_request_duration_seconds')?.get())?.values.filter((x) =>
        (x as { metricName?: string }).metricName?.endsWith('_count'),
      ).length ?? 0;
    const before = await series();
    const flip = (s: string) => [...s].map((c) => (Math.random() < 0.5 ? c.toUpperCase() : c.toLowerCase())).join('');
    const paths = ['/v1/timers', '/v1/me/contacts', '/metrics', '/v1/timers/tmr_x', '/nope', '/v1/whatever/else'];
    for (let i = 0; i < 1000; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, j) => {
          const p = flip(paths[(i + j) % paths.length]!) + (j % 7 === 0 ? `/${Math.random().toString(36).slice(2)}` : '');
          return raw(v.url, { path: p, headers: auth() });
        }),
      );
    }
    const labels = new Set(
      (await v.vigil.metrics.registry.getSingleMetric('vigil_http_request_duration_seconds')?.get())?.values.map((x) => x.labels.route),
    );
    for (const l of labels) expect(String(l)).toBe(String(l).toLowerCase());
    // routes × a few statuses, not one per spelling
    expect((await series()) - before).toBeLessThan(30);
  });
});
