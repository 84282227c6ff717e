/**
 * The OpenAPI document against a real running Vigil: every route Express registers is
 * described, every described path + method is mounted (answers anything but the
 * `route_not_found` 404), bearer security matches what the routes enforce, and
 * /openapi.json serves the document.
 */
import { Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { signToken } from '../../src/auth/tokens.js';
import { HTTP_METHODS, openapiDocument, type OpenApiDocument, type Operation } from '../../src/http/openapi.js';
import { startVigil, type Vigil } from '../../src/main.js';

interface RouteLike {
  path: unknown;
  methods: Record<string, boolean | undefined>;
}
interface LayerLike {
  rawPath?: unknown;
  route?: RouteLike;
  handle?: { stack?: unknown };
}
interface ExpressLike {
  router: { stack: LayerLike[] };
}

// Express 5's router is itself a function (router@2), holding its layers in `stack`
const isExpressApp = (x: unknown): x is ExpressLike =>
  typeof x === 'function' && 'router' in x && typeof x.router === 'function' && Array.isArray((x.router as { stack?: unknown }).stack);

const join2 = (a: string, b: string) => {
  const p = `${a}/${b}`.replace(/\/+/g, '/');
  return p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
};
/** `/v1/timers/:id` → `/v1/timers/{id}`; anything fancier stays as is and fails to match. */
const toOpenApiPath = (p: string) => p.replace(/:(\w+)/g, '{$1}');

function mountPaths(layer: LayerLike): string[] {
  const raw = layer.rawPath ?? '/';
  const list = Array.isArray(raw) ? raw : [raw];
  return list.map((p) => {
    if (typeof p !== 'string') throw new Error(`a route is mounted on a non-string path (${String(p)}); describe it by hand and teach this test`);
    return p;
  });
}

/** Every `METHOD /path` registered in the Express router tree, in OpenAPI path syntax. */
function registeredRoutes(stack: LayerLike[], prefix = ''): string[] {
  const out: string[] = [];
  for (const layer of stack) {
    if (layer.route) {
      for (const p of mountPaths(layer)) {
        const methods = Object.entries(layer.route.methods).filter(([, on]) => on === true).map(([m]) => (m === '_all' ? 'ALL' : m.toUpperCase()));
        for (const m of methods) out.push(`${m} ${toOpenApiPath(join2(prefix, p))}`);
      }
    } else if (layer.handle && Array.isArray(layer.handle.stack)) {
      for (const p of mountPaths(layer)) out.push(...registeredRoutes(layer.handle.stack as LayerLike[], join2(prefix, p)));
    }
  }
  return out;
}

type Described = { method: (typeof HTTP_METHODS)[number]; path: string; op: Operation };

function describedOperations(doc: OpenApiDocument): Described[] {
  const out: Described[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const m of HTTP_METHODS) {
      const op = item[m];
      if (op) out.push({ method: m, path, op });
    }
  }
  return out;
}

const concrete = (path: string) => path.replace(/\{(\w+)\}/g, 'openapi-probe-$1');

function send(method: (typeof HTTP_METHODS)[number], path: string) {
  const agent = request(vigil?.url ?? '');
  switch (method) {
    case 'get':
      return agent.get(concrete(path));
    case 'put':
      return agent.put(concrete(path));
    case 'post':
      return agent.post(concrete(path));
    case 'delete':
      return agent.delete(concrete(path));
    case 'patch':
      return agent.patch(concrete(path));
  }
}

let dir: string;
let vigil: Vigil | undefined;
let app: ExpressLike;
let adminToken: string;
const doc = openapiDocument();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vigil-openapi-'));
  vigil = await startVigil(loadConfig({ DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' }));
  const found: unknown = vigil.app;
  if (!isExpressApp(found)) throw new Error('startVigil did not expose its Express app');
  app = found;
  adminToken = signToken(vigil.config.jwtSecret, { sub: 'openapi-probe-admin', admin: true });
});

afterAll(async () => {
  await vigil?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1 with unique operation ids and $refs that resolve', () => {
    expect(doc.openapi).toBe('3.1.0');
    const ids = describedOperations(doc).map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);

    const text = JSON.stringify(doc);
    const refs = [...text.matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(refs.length).toBeGreaterThan(0);
    const unresolved = refs.filter((r) => {
      const parts = r.replace(/^#\//, '').split('/');
      let node: unknown = doc;
      for (const part of parts) node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[part] : undefined;
      return node === undefined;
    });
    expect(unresolved).toEqual([]);
  });

  it('declares every {param} of a path as a path parameter', () => {
    const params = doc.components.parameters;
    const problems: string[] = [];
    for (const { method, path, op } of describedOperations(doc)) {
      const declared = ((op.parameters ?? []) as Record<string, unknown>[])
        .map((p) => (typeof p.$ref === 'string' ? params[p.$ref.split('/').pop() ?? ''] : p))
        .filter((p) => p?.in === 'path')
        .map((p) => p?.name);
      const wanted = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      if (JSON.stringify([...declared].sort()) !== JSON.stringify([...wanted].sort())) problems.push(`${method.toUpperCase()} ${path}`);
    }
    expect(problems).toEqual([]);
  });
});

describe('OpenAPI document against the running service', () => {
  it('describes every route that Express registers', () => {
    const routes = registeredRoutes(app.router.stack);
    expect(routes).toContain('GET /v1/timers/{id}');
    const described = new Set(describedOperations(doc).map((o) => `${o.method.toUpperCase()} ${o.path}`));
    const undescribed = routes.filter((r) => !described.has(r));
    expect(undescribed, 'routes registered in Express but missing from src/http/openapi.ts').toEqual([]);
  });

  it('mounts every described path and method', async () => {
    const missing: string[] = [];
    for (const { method, path } of describedOperations(doc)) {
      // A valid admin token and an empty JSON body get an unmounted /v1 path past body parsing and
      // auth to the catch-all; a mounted route answers anything else (400, 403, 404 timer_not_found…).
      const req = send(method, path).set('Authorization', `Bearer ${adminToken}`).set('X-Twilio-Signature', 'openapi-probe');
      const res = await (method === 'get' ? req : req.send({}));
      const body: unknown = res.body;
      const code = typeof body === 'object' && body !== null && 'error' in body ? (body as { error?: { code?: unknown } }).error?.code : undefined;
      if (res.status === 404 && code === 'route_not_found') missing.push(`${method.toUpperCase()} ${path}`);
    }
    expect(missing, 'described in src/http/openapi.ts but not mounted (answers route_not_found)').toEqual([]);
  });

  it('refuses a request without a token wherever bearer security is described', async () => {
    const wrong: string[] = [];
    for (const { method, path, op } of describedOperations(doc)) {
      const isPublic = Array.isArray(op.security) && op.security.length === 0;
      if (isPublic) continue;
      const res = await (method === 'get' ? send(method, path) : send(method, path).send({}));
      if (res.status !== 401) wrong.push(`${method.toUpperCase()} ${path} answered ${res.status}`);
    }
    expect(wrong).toEqual([]);
  });

  it('serves the document at /openapi.json', async () => {
    const res = await request(vigil?.url ?? '').get('/openapi.json');
    expect(res.status, 'createApp({ openapi: openapiDocument() }) is not wired in src/main.ts').toBe(200);
    expect(res.body).toEqual(JSON.parse(JSON.stringify(doc)));
  });
});
