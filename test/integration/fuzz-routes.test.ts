/**
 * Property-based fuzzing of every route in the OpenAPI document (fast-check): generated
 * path parameters (with broken `%` escapes), headers (tokens, content types and encodings,
 * idempotency keys) and bodies (JSON, near-valid objects, raw bytes, compressed or corrupt).
 * For every request: no 5xx; every error is `{ error: { code, message, details? } }`; a
 * refused request (4xx) writes nothing — checked on the SQLite file itself
 * (`PRAGMA data_version` of a second connection moves only when another connection commits).
 */
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';

let v: TestVigil;
let db: Database.Database;
let routes: { method: string; path: string }[];

beforeAll(async () => {
  v = await startTestVigil({}, { manualTicks: true });
  db = new Database(join(v.dataDir, 'vigil.db'), { readonly: true });
  const doc = (await (await fetch(`${v.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  routes = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
      .map((method) => ({ method: method.toUpperCase(), path })),
  );
});
afterAll(async () => {
  db?.close();
  await v?.stop();
});

const dataVersion = () => db.pragma('data_version', { simple: true }) as number;

interface Answer {
  status: number;
  type: string;
  text: string;
}
function send(method: string, path: string, headers: Record<string, string>, body: Buffer | undefined): Promise<Answer> {
  const u = new URL(v.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          type: String(res.headers['content-type'] ?? ''),
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

let people = 0;
const tokenOf = (kind: string): string | undefined => {
  const secret = v.vigil.config.jwtSecret ?? '';
  const sub = `fuzz-${++people}`;
  switch (kind) {
    case 'user':
      return v.token(sub);
    case 'admin':
      return v.token(sub, { admin: true });
    case 'expired':
      return jwt.sign({ sub, exp: Math.floor(Date.now() / 1000) - 10 }, secret, { algorithm: 'HS256' });
    case 'no-exp':
      return jwt.sign({ sub }, secret, { algorithm: 'HS256' });
    case 'other-secret':
      return jwt.sign({ sub }, 'y'.repeat(40), { algorithm: 'HS256', expiresIn: 60 });
    case 'garbage':
      return 'not.a.jwt';
    default:
      return undefined;
  }
};

// path parameters: plausible ids, anything percent-encoded, and broken escapes
const param = fc.oneof(
  fc.constantFrom('tmr_00000000-0000-0000-0000-000000000000', 'inc_x', '%', '%zz', '%E0%A4%A', '%00', '..', '%2e%2e', '%c0%af', 'a%2Fb'),
  fc.string({ unit: 'binary', maxLength: 40 }).map((s) => encodeURIComponent(s) || 'x'),
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 300 }).map((s) => s.replace(/[^\w.~-]/g, '%')),
);
const header = fc.string({ unit: 'grapheme-ascii', maxLength: 60 }).map((s) => s.replace(/[\r\n]/g, ''));
const nearValid = fc.oneof(
  fc.record(
    {
      durationSeconds: fc.oneof(fc.integer(), fc.double(), fc.string(), fc.constant(null)),
      locationName: fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), fc.integer()),
      location: fc.oneof(fc.record({ lat: fc.double(), lng: fc.double() }), fc.string()),
      seconds: fc.oneof(fc.integer(), fc.double()),
      extra: fc.jsonValue(),
    },
    { requiredKeys: [] },
  ),
  fc.record({
    contacts: fc.array(
      fc.record({ name: fc.string({ unit: 'binary', maxLength: 100 }), phone: fc.oneof(fc.string(), fc.constant('+14155550100')) }),
      {
        maxLength: 12,
      },
    ),
  }),
);
const bodyText = fc.oneof(
  fc.constant(undefined),
  fc.jsonValue({ maxDepth: 4 }).map((j) => JSON.stringify(j)),
  nearValid.map((o) => JSON.stringify(o)),
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.constant('{"durationSeconds":'),
  fc.constant('MessageSid=SM1&MessageStatus=delivered'),
);
const encoding = fc.constantFrom(undefined, 'identity', 'gzip', 'deflate', 'br', 'compress', 'gzip, br', 'x-corrupt-gzip');
const contentType = fc.constantFrom(
  undefined,
  'application/json',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
);
const input = fc.record({
  route: fc.nat(),
  methodOverride: fc.option(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'), { freq: 5 }),
  caseFlip: fc.boolean(),
  params: fc.array(param, { minLength: 3, maxLength: 3 }),
  query: fc.option(fc.string({ unit: 'grapheme-ascii', maxLength: 60 }).map(encodeURIComponent), { freq: 3 }),
  auth: fc.constantFrom('user', 'user', 'admin', 'none', 'expired', 'no-exp', 'other-secret', 'garbage'),
  idempotencyKey: fc.option(header, { freq: 3 }),
  contentType,
  encoding,
  body: bodyText,
});

function encode(text: string | undefined, enc: string | undefined): Buffer | undefined {
  if (text === undefined) return undefined;
  const b = Buffer.from(text, 'utf8');
  if (enc === 'gzip') return gzipSync(b);
  if (enc === 'deflate') return deflateSync(b);
  if (enc === 'br') return brotliCompressSync(b);
  return b; // identity, unsupported, and "gzip" headers over plain bytes (corrupt)
}

describe('fuzzing every documented route', () => {
  it('never answers 5xx, always answers errors in the JSON error shape, and writes nothing when it refuses', async () => {
    // the write detector works: an accepted write moves it
    const v0 = dataVersion();
    expect((await v.api(v.token('fuzz-probe'), 'POST', '/v1/timers', { durationSeconds: 600 })).status).toBe(201);
    expect(dataVersion()).not.toBe(v0);
    const seen = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(input, async (i) => {
        const r = routes[i.route % routes.length]!;
        let n = 0;
        let path = r.path.replace(/\{[^}]+\}/g, () => i.params[n++] ?? 'x');
        if (i.caseFlip) path = path.toUpperCase();
        if (i.query) path += `?${i.query}`;
        const method = i.methodOverride ?? r.method;
        const headers: Record<string, string> = {};
        const token = tokenOf(i.auth);
        if (token) headers.authorization = `Bearer ${token}`;
        if (i.idempotencyKey !== null) headers['idempotency-key'] = i.idempotencyKey;
        if (i.contentType) headers['content-type'] = i.contentType;
        const enc = i.encoding === 'x-corrupt-gzip' ? 'gzip' : i.encoding;
        if (enc) headers['content-encoding'] = enc;
        const body = method === 'GET' || method === 'HEAD' ? undefined : encode(i.body, i.encoding === 'x-corrupt-gzip' ? undefined : enc);

        // framed correctly (a body without a length is the next request to the parser)
        if (body) headers['content-length'] = String(body.length);
        const before = dataVersion();
        const a = await send(method, path, headers, body);
        const after = dataVersion();
        seen.set(a.status, (seen.get(a.status) ?? 0) + 1);
        const what = `${method} ${path} → ${a.status} ${a.text.slice(0, 200)}`;
        expect(a.status, what).toBeLessThan(500);
        if (a.status >= 400 && method !== 'HEAD') {
          expect(a.type, what).toMatch(/^application\/json/);
          const e = JSON.parse(a.text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
          expect(Object.keys(e), what).toEqual(['error']);
          expect(typeof e.error?.code, what).toBe('string');
          expect(typeof e.error?.message, what).toBe('string');
          expect(
            Object.keys(e.error ?? {}).every((k) => ['code', 'message', 'details'].includes(k)),
            what,
          ).toBe(true);
          expect(a.text, what).not.toMatch(/\bat .*\.(ts|js):\d+/);
          expect(after, `${what}: a refused request wrote to the store`).toBe(before);
        }
      }),
      { numRuns: 3000, interruptAfterTimeLimit: 50_000 },
    );
    // the run reached past authentication and validation, not only 401s
    expect([...seen.keys()].some((s) => s >= 200 && s < 300)).toBe(true);
    expect(seen.get(400) ?? 0).toBeGreaterThan(50);
  }, 120_000);
});
