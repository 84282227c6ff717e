/**
 * The OpenAPI document against a real running Vigil: every route Express registers is
 * described, every described path + method is mounted (answers anything but the
 * `route_not_found` 404), bearer security matches what the routes enforce, /openapi.json
 * serves the document, every documented request bound is the one the service enforces (a
 * value on the bound is accepted, one just past it is refused with 400), and the answers to
 * those probes have the documented shape, with no undocumented fields.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { signToken } from '../../src/auth/tokens.js';
import { GENEROUS_LIMITS } from '../helpers/limits.js';
import { MAX_CONTACTS } from '../../src/domain/contact.js';
import { makeLimits } from '../../src/domain/limits.js';
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
    if (typeof p !== 'string')
      throw new Error(`a route is mounted on a non-string path (${String(p)}); describe it by hand and teach this test`);
    return p;
  });
}

/** Every `METHOD /path` registered in the Express router tree, in OpenAPI path syntax. */
function registeredRoutes(stack: LayerLike[], prefix = ''): string[] {
  const out: string[] = [];
  for (const layer of stack) {
    if (layer.route) {
      for (const p of mountPaths(layer)) {
        const methods = Object.entries(layer.route.methods)
          .filter(([, on]) => on === true)
          .map(([m]) => (m === '_all' ? 'ALL' : m.toUpperCase()));
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
let mountProbeAdmin: string;
let doc: OpenApiDocument;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vigil-openapi-'));
  // not the defaults: the documented duration bounds must follow the configuration
  const env = {
    DATA_DIR: dir,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    TIMER_MIN_SECONDS: '45',
    TIMER_MAX_SECONDS: '7200',
    ...GENEROUS_LIMITS,
  };
  vigil = await startVigil(loadConfig(env));
  doc = openapiDocument(makeLimits(vigil.config.limits));
  const found: unknown = vigil.app;
  if (!isExpressApp(found)) throw new Error('startVigil did not expose its Express app');
  app = found;
  adminToken = signToken(vigil.config.jwtSecret ?? '', { sub: 'openapi-probe-admin', admin: true });
  mountProbeAdmin = signToken(vigil.config.jwtSecret ?? '', { sub: 'openapi-mount-probe-admin', admin: true });
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
      // An admin of this probe's own: POST /v1/me/tokens/revoke revokes the token that calls it.
      const req = send(method, path).set('Authorization', `Bearer ${mountProbeAdmin}`).set('X-Twilio-Signature', 'openapi-probe');
      const res = await (method === 'get' ? req : req.send({}));
      const body: unknown = res.body;
      const code =
        typeof body === 'object' && body !== null && 'error' in body ? (body as { error?: { code?: unknown } }).error?.code : undefined;
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

// ---- documented bounds against the validators ----

type Schema = Record<string, unknown>;
const isSchema = (x: unknown): x is Schema => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Follows a local `$ref` (`#/components/...`) to the node it names. */
function resolve(node: unknown): Schema {
  if (!isSchema(node)) throw new Error(`not a schema: ${JSON.stringify(node)}`);
  if (typeof node.$ref !== 'string') return node;
  let at: unknown = doc;
  for (const part of node.$ref.replace(/^#\//, '').split('/')) at = isSchema(at) ? at[part] : undefined;
  return resolve(at);
}

const num = (s: Schema, k: string) => (typeof s[k] === 'number' ? s[k] : undefined);
const strings = (x: unknown) => (Array.isArray(x) ? x.filter((v): v is string => typeof v === 'string') : []);
const NOT_A_PATTERN_MATCH = 'a b';

/** A value the schema allows, on its lower or upper edges; `seed` makes array items distinct. */
function sample(node: unknown, edge: 'min' | 'max', seed = 0): unknown {
  const s = resolve(node);
  const examples = strings(s.examples);
  if (examples[0] !== undefined) {
    const ex = examples[0];
    if (seed === 0) return ex;
    const varied = ex.slice(0, -3) + String(seed).padStart(3, '0');
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern).test(varied)) throw new Error(`cannot vary example ${ex}; teach sample()`);
    return varied;
  }
  const listed = strings(s.enum);
  if (listed.length > 0) return edge === 'min' ? listed[0] : listed[listed.length - 1];
  switch (s.type) {
    case 'object': {
      const props = isSchema(s.properties) ? s.properties : {};
      return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, sample(v, edge, seed)]));
    }
    case 'array':
      return Array.from({ length: Math.max(1, num(s, 'minItems') ?? 1) }, (_, i) => sample(s.items, edge, seed + i));
    case 'integer':
    case 'number':
      return edge === 'min' ? (num(s, 'minimum') ?? 1) : (num(s, 'maximum') ?? num(s, 'minimum') ?? 1);
    case 'boolean':
      return true;
    case 'string': {
      if (s.format === 'date-time') return new Date().toISOString();
      if (typeof s.pattern === 'string' && !new RegExp(s.pattern).test('a'))
        throw new Error(`string pattern ${s.pattern} needs examples in the schema`);
      const length = edge === 'min' ? Math.max(1, num(s, 'minLength') ?? 1) : (num(s, 'maxLength') ?? 8);
      return 'a'.repeat(length);
    }
    default:
      throw new Error(`sample() does not know ${JSON.stringify(s)}`);
  }
}

/** `code`: the error the refusal must carry; a bound the domain checks says so in its description. */
type Violation = { label: string; value: unknown; code?: string };

/** Values that break exactly one documented constraint of `node`, starting from the valid `value`. */
function violations(node: unknown, value: unknown, label = '$'): Violation[] {
  const s = resolve(node);
  const out: Violation[] = [];
  if (strings(s.enum).length > 0) out.push({ label: `${label} not in enum`, value: 'openapi-probe-unlisted' });
  switch (s.type) {
    case 'object': {
      if (!isSchema(value)) throw new Error(`${label}: sample is not an object`);
      if (s.additionalProperties === false)
        out.push({ label: `${label} with an undocumented field`, value: { ...value, openapiProbe: 1 } });
      for (const k of strings(s.required)) {
        const { [k]: _dropped, ...rest } = value;
        out.push({ label: `${label}.${k} missing`, value: rest });
      }
      for (const [k, v] of Object.entries(isSchema(s.properties) ? s.properties : {})) {
        for (const inner of violations(v, value[k], `${label}.${k}`)) out.push({ ...inner, value: { ...value, [k]: inner.value } });
      }
      break;
    }
    case 'array': {
      if (!Array.isArray(value)) throw new Error(`${label}: sample is not an array`);
      const max = num(s, 'maxItems');
      if (max !== undefined)
        out.push({
          label: `${label} with ${max + 1} items`,
          value: Array.from({ length: max + 1 }, (_, i) => sample(s.items, 'min', i + 1)),
        });
      for (const inner of violations(s.items, value[0], `${label}[0]`)) out.push({ ...inner, value: [inner.value, ...value.slice(1)] });
      break;
    }
    case 'integer':
    case 'number': {
      const min = num(s, 'minimum');
      const max = num(s, 'maximum');
      const code = typeof s.description === 'string' && s.description.includes('`out_of_range`') ? 'out_of_range' : undefined;
      if (min !== undefined) out.push({ label: `${label} = ${min - 1} (minimum ${min})`, value: min - 1, code });
      if (max !== undefined) out.push({ label: `${label} = ${max + 1} (maximum ${max})`, value: max + 1, code });
      if (s.type === 'integer') out.push({ label: `${label} not an integer`, value: (typeof value === 'number' ? value : 1) + 0.5 });
      out.push({ label: `${label} as a string`, value: String(value) });
      break;
    }
    case 'string': {
      const min = num(s, 'minLength');
      const max = num(s, 'maxLength');
      if (min !== undefined && min > 0) out.push({ label: `${label} shorter than ${min}`, value: 'a'.repeat(min - 1) });
      if (max !== undefined) out.push({ label: `${label} longer than ${max}`, value: 'a'.repeat(max + 1) });
      if (typeof s.pattern === 'string' && !new RegExp(s.pattern).test(NOT_A_PATTERN_MATCH))
        out.push({ label: `${label} not matching ${s.pattern}`, value: NOT_A_PATTERN_MATCH });
      if (s.format === 'date-time') out.push({ label: `${label} not a date-time`, value: 'yesterday' });
      out.push({ label: `${label} as a number`, value: 7 });
      break;
    }
  }
  return out;
}

/** Property names an object schema describes, through `allOf`. */
function described(node: unknown): Set<string> | undefined {
  const s = resolve(node);
  if (Array.isArray(s.allOf)) {
    const all = new Set<string>();
    for (const part of s.allOf) for (const k of described(part) ?? []) all.add(k);
    return all;
  }
  return isSchema(s.properties) ? new Set(Object.keys(s.properties)) : undefined;
}

/**
 * The subset of JSON Schema the document uses; an object field the schema does not describe
 * is a problem too, so an answer cannot grow past its documentation.
 */
function mismatches(node: unknown, value: unknown, at = '$'): string[] {
  const s = resolve(node);
  const out: string[] = [];
  if (Array.isArray(s.allOf)) {
    for (const part of s.allOf) out.push(...mismatches({ ...resolve(part), additionalProperties: true }, value, at));
    const names = described(s);
    if (names && isSchema(value)) for (const k of Object.keys(value)) if (!names.has(k)) out.push(`${at}.${k} is not documented`);
    return out;
  }
  if (Array.isArray(s.oneOf))
    return s.oneOf.some((alt) => mismatches(alt, value, at).length === 0) ? [] : [`${at} matches no oneOf branch`];
  const listed: unknown[] = Array.isArray(s.enum) ? s.enum : [];
  if (listed.length > 0 && !listed.includes(value)) out.push(`${at}=${JSON.stringify(value)} not in ${JSON.stringify(listed)}`);
  if ('const' in s && s.const !== value) out.push(`${at} is not ${JSON.stringify(s.const)}`);
  switch (s.type) {
    case 'object': {
      if (!isSchema(value)) return [...out, `${at} is not an object`];
      for (const k of strings(s.required)) if (!(k in value)) out.push(`${at}.${k} is missing`);
      const props = isSchema(s.properties) ? s.properties : {};
      for (const [k, v] of Object.entries(value)) {
        if (k in props) out.push(...mismatches(props[k], v, `${at}.${k}`));
        else if (isSchema(s.additionalProperties)) out.push(...mismatches(s.additionalProperties, v, `${at}.${k}`));
        else if (s.additionalProperties !== true) out.push(`${at}.${k} is not documented`);
      }
      break;
    }
    case 'array':
      if (!Array.isArray(value)) return [...out, `${at} is not an array`];
      value.forEach((v, i) => out.push(...mismatches(s.items, v, `${at}[${i}]`)));
      break;
    case 'integer':
    case 'number':
      if (typeof value !== 'number' || (s.type === 'integer' && !Number.isInteger(value)))
        return [...out, `${at}=${JSON.stringify(value)} is not an ${String(s.type)}`];
      if (value < (num(s, 'minimum') ?? -Infinity) || value > (num(s, 'maximum') ?? Infinity)) out.push(`${at}=${value} out of bounds`);
      break;
    case 'string':
      if (typeof value !== 'string') return [...out, `${at}=${JSON.stringify(value)} is not a string`];
      if (value.length > (num(s, 'maxLength') ?? Infinity) || value.length < (num(s, 'minLength') ?? 0))
        out.push(`${at} has a length out of bounds`);
      if (typeof s.pattern === 'string' && !new RegExp(s.pattern).test(value)) out.push(`${at}=${value} does not match ${s.pattern}`);
      if (s.format === 'date-time' && Number.isNaN(Date.parse(value))) out.push(`${at}=${value} is not a date-time`);
      break;
    case 'boolean':
      if (typeof value !== 'boolean') out.push(`${at} is not a boolean`);
      break;
  }
  return out;
}

/** Problems of a 2xx answer against the response the operation documents for its status. */
function answerProblems(label: string, op: Operation, res: { status: number; body: unknown }): string[] {
  const documented = op.responses[String(res.status)];
  if (documented === undefined) return [`${label}: status ${res.status} is not documented`];
  const r = resolve(documented);
  const media = isSchema(r.content) ? r.content['application/json'] : undefined;
  if (!isSchema(media)) return [];
  return mismatches(media.schema, res.body).map((m) => `${label}: ${m}`);
}

const errorCode = (body: unknown) => (isSchema(body) && isSchema(body.error) ? body.error.code : undefined);
let probeUsers = 0;
const freshUser = () => signToken(vigil?.config.jwtSecret ?? '', { sub: `openapi-probe-user-${++probeUsers}` });

const params = (op: Operation) => ((op.parameters ?? []) as unknown[]).map((p) => resolve(p));

/**
 * Where to send a request to `path`: admin routes with the admin token and made-up ids (a
 * valid request then answers 404, never 400); the caller's timer routes on a timer just
 * armed by a fresh user, so a valid request succeeds.
 */
async function target(path: string): Promise<{ url: string; token: string; strict2xx: boolean }> {
  if (path.startsWith('/v1/admin'))
    return { url: concrete(path), token: adminToken, strict2xx: !path.includes('{') || path.includes('/users/') };
  const token = freshUser();
  if (!path.includes('{id}')) return { url: path, token, strict2xx: true };
  if (path.startsWith('/v1/me/notifications/')) {
    // a notification of this fresh user, so a valid request succeeds
    const id = `ntf_openapi_probe_${probeUsers}`;
    await vigil?.store.addNotification({
      id,
      userId: `openapi-probe-user-${probeUsers}`,
      key: id,
      kind: 'timer_warning',
      title: 't',
      body: 'b',
    });
    return { url: path.replace('{id}', id), token, strict2xx: true };
  }
  if (path.startsWith('/v1/incidents/')) {
    // an open incident of this fresh user (a panic), so a valid request succeeds
    const raised = await request(vigil?.url ?? '')
      .post('/v1/sos')
      .set('Authorization', `Bearer ${token}`)
      .send({});
    expect(raised.status).toBe(201);
    const incidentId = isSchema(raised.body) && isSchema(raised.body.incident) ? raised.body.incident.id : undefined;
    if (typeof incidentId !== 'string') throw new Error('the panic answered no incident id');
    return { url: path.replace('{id}', incidentId), token, strict2xx: true };
  }
  const minSeconds = vigil?.config.limits.minSeconds ?? 0;
  const armed = await request(vigil?.url ?? '')
    .post('/v1/timers')
    .set('Authorization', `Bearer ${token}`)
    .send({ durationSeconds: minSeconds });
  expect(armed.status).toBe(201);
  const id = isSchema(armed.body) && isSchema(armed.body.timer) ? armed.body.timer.id : undefined;
  if (typeof id !== 'string') throw new Error('arming answered no timer id');
  return { url: path.replace('{id}', id), token, strict2xx: true };
}

function call(method: (typeof HTTP_METHODS)[number], url: string, token: string) {
  const agent = request(vigil?.url ?? '');
  const req =
    method === 'get'
      ? agent.get(url)
      : method === 'put'
        ? agent.put(url)
        : method === 'post'
          ? agent.post(url)
          : method === 'patch'
            ? agent.patch(url)
            : agent.delete(url);
  return req.set('Authorization', `Bearer ${token}`);
}

const bodySchema = (op: Operation): unknown => {
  const body = op.requestBody;
  if (!isSchema(body) || !isSchema(body.content)) return undefined;
  const media = body.content['application/json'];
  return isSchema(media) ? media.schema : undefined;
};

describe('documented request bounds are the ones the service enforces, and answers look as documented', () => {
  it('accepts a body on the lower and on the upper edges of every documented JSON body schema', async () => {
    const wrong: string[] = [];
    const probed: string[] = [];
    for (const { method, path, op } of describedOperations(doc)) {
      const schema = bodySchema(op);
      if (schema === undefined) continue;
      probed.push(op.operationId);
      for (const edge of ['min', 'max'] as const) {
        const t = await target(path);
        const body = sample(schema, edge);
        const res = await call(method, t.url, t.token).send(body as object);
        const fine = t.strict2xx ? res.status >= 200 && res.status < 300 : res.status !== 400 && res.status !== 422;
        wrong.push(...answerProblems(`${method.toUpperCase()} ${path}`, op, res));
        if (!fine)
          wrong.push(
            `${method.toUpperCase()} ${path} ${JSON.stringify(body).slice(0, 120)} answered ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`,
          );
      }
    }
    expect(probed).toEqual(
      expect.arrayContaining([
        'armTimer',
        'extendTimer',
        'checkIn',
        'cancelTimer',
        'replaceContacts',
        'acknowledgeIncident',
        'resolveIncident',
      ]),
    );
    expect(wrong).toEqual([]);
  });

  it('refuses with 400 a body just outside any documented constraint', async () => {
    const wrong: string[] = [];
    const labels: string[] = [];
    for (const { method, path, op } of describedOperations(doc)) {
      const schema = bodySchema(op);
      if (schema === undefined) continue;
      const t = await target(path);
      for (const v of violations(schema, sample(schema, 'min'))) {
        labels.push(`${path} ${v.label}`);
        const res = await call(method, t.url, t.token).send(JSON.stringify(v.value)).set('Content-Type', 'application/json');
        wrong.push(...answerProblems(`${method.toUpperCase()} ${path} ${v.label}`, op, res));
        if (res.status !== 400 || errorCode(res.body) !== (v.code ?? 'validation_failed'))
          wrong.push(`${method.toUpperCase()} ${path}: ${v.label} answered ${res.status} ${JSON.stringify(res.body).slice(0, 160)}`);
      }
    }
    // the bounds this test exists for must be among the probes
    expect(labels).toEqual(
      expect.arrayContaining([
        '/v1/timers $.durationSeconds = 44 (minimum 45)',
        '/v1/timers $.durationSeconds = 7201 (maximum 7200)',
        '/v1/timers $.locationName longer than 120',
        `/v1/me/contacts $.contacts with ${MAX_CONTACTS + 1} items`,
      ]),
    );
    expect(wrong).toEqual([]);
  });

  it('accepts every documented query, path and header parameter on its bounds and refuses it just outside', async () => {
    const wrong: string[] = [];
    let probed = 0;
    for (const { method, path, op } of describedOperations(doc)) {
      const body = bodySchema(op);
      for (const p of params(op)) {
        const name = String(p.name);
        if (p.in === 'header' && name === 'X-Twilio-Signature') continue; // the receipts route authenticates it, it has no bounds
        const values = (p.in === 'query' || p.in === 'header' ? [sample(p.schema, 'min'), sample(p.schema, 'max')] : []).map((value) => ({
          value,
          ok: true,
        }));
        // parameters travel as text, so type violations are not ones; an empty path segment is another route
        const bad = violations(p.schema, sample(p.schema, 'min')).filter(
          (v) => !/as a (number|string)$/.test(v.label) && !(p.in === 'path' && v.label.endsWith('shorter than 1')),
        );
        for (const v of bad) values.push({ value: v.value, ok: false });
        if (p.in === 'path') values.push({ value: sample(p.schema, 'max'), ok: true });
        for (const { value, ok } of values) {
          const t = await target(path);
          let url = t.url;
          let req;
          // a person's timers without an open incident need a stated reason (400 reason_required): every probe states one
          const needed = path === '/v1/admin/users/{userId}/timers' && name !== 'reason' ? { reason: 'openapi probe' } : {};
          if (p.in === 'path') {
            url = path.replace(`{${name}}`, encodeURIComponent(String(value))).replace(/\{(\w+)\}/g, 'openapi-probe-$1');
            req = call(method, url, t.token).query(needed);
          } else if (p.in === 'query') {
            req = call(method, url, t.token).query({ ...needed, [name]: String(value) });
          } else {
            req = call(method, url, t.token).set(name, String(value));
          }
          const res = await (body === undefined ? req : req.send(sample(body, 'min') as object));
          probed++;
          wrong.push(...answerProblems(`${method.toUpperCase()} ${path} ${p.in} ${name}`, op, res));
          const refused = res.status === 400 && errorCode(res.body) === 'validation_failed';
          const accepted = res.status !== 400;
          if (ok ? !accepted : !refused)
            wrong.push(
              `${method.toUpperCase()} ${path} ${p.in} ${name}=${JSON.stringify(value).slice(0, 40)} answered ${res.status} ${JSON.stringify(res.body).slice(0, 160)}`,
            );
        }
      }
      if (method === 'get' && params(op).some((p) => p.in === 'query')) {
        const t = await target(path);
        const res = await call(method, t.url, t.token).query({ openapiProbe: '1' });
        probed++;
        if (res.status !== 400) wrong.push(`${method.toUpperCase()} ${path} accepted an undocumented query parameter`);
      }
    }
    expect(probed).toBeGreaterThan(20);
    expect(wrong).toEqual([]);
  });
});
