/**
 * The Express app: request ids and logs, metrics, health, the /v1 API, errors.
 * It receives everything it needs; it knows no adapter.
 */
import type { DuressCheckIns, DuressPins } from '../app/duress.js';
import { duressRoutes } from './routes/duress.js';
import { randomUUID } from 'node:crypto';
import { SpanStatusCode } from '@opentelemetry/api';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import helmet from 'helmet';
import type { Logger } from 'pino';
import type { IncidentService } from '../app/incidents.js';
import type { LocationService } from '../app/location.js';
import type { ModerationService } from '../app/moderation.js';
import type { TimerService } from '../app/timers.js';
import type { TokenRevocations } from '../app/token-revocations.js';
import type { Metrics } from '../metrics.js';
import type { Store } from '../store/port.js';
import { noTracing, SpanKind, type Tracing } from '../telemetry/tracing.js';
import type { TokenPolicy } from '../auth/tokens.js';
import { adminOnly, identify, requirePrincipal } from './auth.js';
import { errorHandler, notFoundHandler, sendError } from './errors.js';
import { refuseScrape, scrapeAllowed, writeScrape } from './metrics-endpoint.js';
import { adminRoutes } from './routes/admin.js';
import { contactRoutes } from './routes/contacts.js';
import type { ContactIdKey } from '../domain/contact.js';
import { adminLocationRoutes, locationRoutes } from './routes/location.js';
import { moderationRoutes } from './routes/moderation.js';
import { timerRoutes } from './routes/timers.js';
import { adminTokenRoutes, ownTokenRoutes } from './routes/tokens.js';
import { personalDataRoutes } from './routes/me.js';
import { notificationRoutes, ownIncidentRoutes, sosRoutes } from './routes/safety.js';
import { AccessAudit } from '../app/access-audit.js';
import type { NotificationService } from '../app/notifications.js';
import type { PersonalDataService } from '../app/personal-data.js';
import type { PanicService } from '../app/panic.js';

export interface AppDeps {
  store: Store;
  /** derives the ids of the contacts people save (the key the store's ids are derived with) */
  contactIds: ContactIdKey;
  timers: TimerService;
  incidents: IncidentService;
  /** live location routes; absent in tests that do not need them */
  location?: LocationService;
  /** the panic button and the inbox (absent: those routes are not mounted) */
  safety?: { panic: PanicService; notifications: NotificationService };
  /** the caller's own data: export and erasure (`/v1/me/export`, `DELETE /v1/me`); not mounted when absent */
  personal?: PersonalDataService;
  /** moderator actions on texts (resend, cancel, notes, audit); not mounted when absent */
  moderation?: ModerationService;
  metrics: Metrics;
  log: Logger;
  /** a span per request, continuing an incoming W3C `traceparent`; none when absent */
  tracing?: Tracing;
  /** the HS256 secret; none when only public keys verify tokens (in `tokenPolicy.keys`) */
  jwtSecret?: string;
  /** exp required, maximum lifetime, iss/aud; default: 30 days, no iss/aud */
  tokenPolicy?: TokenPolicy;
  /** the people's "tokens not before" stamps, and the routes that move them; absent: no revocation */
  revocations?: TokenRevocations;
  /** the duress PIN: its routes, and check-ins that may carry it */
  duress?: { pins: DuressPins; checkIns: DuressCheckIns };
  bodyLimit: string;
  /** request budgets (./rate-limit.ts); none: unlimited */
  rateLimit?: RequestHandler;
  /** Express `trust proxy`; default: loopback only (a proxy on the same host) */
  trustProxy?: boolean | number | string[];
  /** true once shutdown has begun: /readyz answers 503 so the load balancer stops sending */
  draining: () => boolean;
  /** a store check serves the /readyz of this long after it (ms): a flood of probes costs one ping per window; default 0 */
  readyCacheMs?: number;
  /** `/metrics` here (default), or on a listener of its own (METRICS_PORT: `onMainPort: false`); `token`: METRICS_TOKEN */
  scrape?: { onMainPort: boolean; token?: string };
  /** routers mounted before the API (e.g. carrier receipts, the console) */
  extra?: { path: string; router: Router }[];
  openapi?: object;
}

/**
 * The route template (`/v1/timers/:id`), never the URL: ids must not become metric labels.
 * Express matches case-insensitively and the mount point keeps the client's spelling, so
 * it is lower-cased (every mount point is lower case); unmatched requests share one label.
 */
export function routeLabel(req: Request, res: Response): string {
  if (!req.route) return 'unmatched';
  const base = typeof res.locals.base === 'string' ? res.locals.base : req.baseUrl;
  const path = `${base.toLowerCase()}${String(req.route.path)}`;
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/** Remembers where a router is mounted; Express resets baseUrl once the router is left. */
const markBase = (req: Request, res: Response, next: NextFunction) => {
  res.locals.base = req.baseUrl;
  next();
};

/** `check`, its answer kept for `ttlMs` and shared by the callers that ask while it runs. */
function cachedCheck(check: () => Promise<boolean>, ttlMs: number): () => Promise<boolean> {
  let running: Promise<boolean> | undefined;
  let last: { at: number; ok: boolean } | undefined;
  return () => {
    if (last && performance.now() - last.at < ttlMs) return Promise.resolve(last.ok);
    return (running ??= check()
      .then((ok) => {
        last = { at: performance.now(), ok };
        return ok;
      })
      .finally(() => {
        running = undefined;
      }));
  };
}

export function createApp(d: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', d.trustProxy ?? ['loopback']);
  app.set('query parser', 'simple');

  app.use((req: Request, res: Response, next: NextFunction) => {
    const incoming = req.header('x-request-id');
    req.requestId = incoming && /^[\w.-]{1,100}$/.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', req.requestId);
    const start = performance.now();
    res.on('finish', () => {
      const route = routeLabel(req, res);
      const seconds = (performance.now() - start) / 1000;
      d.metrics.httpDuration.observe({ method: req.method, route, status: String(res.statusCode) }, seconds);
      d.metrics.countCommand(req.method, route, res.statusCode, res.locals.errorCode);
      // refusals of a flood are counted, not logged one by one (rate-limit.ts logs each exhausted budget once)
      if (route !== '/metrics' && route !== '/livez' && route !== '/readyz' && res.statusCode !== 429) {
        d.log.info({ reqId: req.requestId, method: req.method, route, status: res.statusCode, ms: Math.round(seconds * 1000) }, 'request');
      }
    });
    next();
  });

  // A span per request, named by the route template; health and scrapes are not traced.
  const tracing = d.tracing ?? noTracing();
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (!tracing.enabled || req.path === '/metrics' || req.path === '/livez' || req.path === '/readyz') return next();
    const span = tracing.startSpan(req.method, {
      kind: SpanKind.SERVER,
      parent: req.header('traceparent') ?? null,
      attributes: { 'http.request.method': req.method, 'vigil.request_id': req.requestId },
    });
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      const route = routeLabel(req, res);
      span.updateName(`${req.method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': res.statusCode });
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    res.once('finish', end);
    res.once('close', end);
    tracing.run(span, next);
  });

  // nosniff, no framing, no referrer, a deny-all CSP for JSON answers (the console sets its own)
  app.use(
    helmet({
      contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
      crossOriginResourcePolicy: { policy: 'same-origin' },
      referrerPolicy: { policy: 'no-referrer' },
    }),
  );

  app.get('/livez', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // only the store: the lock is for efficiency, its absence does not make us unready
  const storeAnswers = cachedCheck(() => d.store.ping().catch(() => false), d.readyCacheMs ?? 0);
  app.get('/readyz', async (_req, res) => {
    if (d.draining()) return sendError(res, 503, 'draining', 'this replica is shutting down');
    // ready or not, nothing more: which check failed is for the on-call (vigil_store_up, the logs), not the public
    const ok = await storeAnswers();
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not_ready' });
  });
  if (d.scrape?.onMainPort !== false) {
    const token = d.scrape?.token;
    app.get('/metrics', async (req, res) => {
      if (!scrapeAllowed(req.header('authorization'), token)) {
        res.locals.errorCode = 'unauthorized';
        return refuseScrape(res);
      }
      await writeScrape(res, d.metrics.registry);
    });
  }
  // Everything below is budgeted: the token is read first (no body yet), then the budget of
  // the person, or of the address when there is no valid token, is charged.
  app.use(identify(d.jwtSecret, d.tokenPolicy, d.revocations));
  if (d.rateLimit) app.use(d.rateLimit);

  if (d.openapi) {
    const doc = d.openapi;
    app.get('/openapi.json', (_req, res) => {
      res.json(doc);
    });
  }

  for (const e of d.extra ?? []) app.use(e.path, e.router);

  const api = express.Router();
  // answers may carry phone numbers and places: never cached anywhere
  api.use((_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });
  // authenticated before the body is read: an anonymous client cannot make us parse anything
  api.use(requirePrincipal);
  api.use(express.json({ limit: d.bodyLimit, strict: true, type: () => true }));
  if (d.location) api.use('/timers', markBase, locationRoutes(d.location));
  api.use('/timers', markBase, timerRoutes(d.timers, d.duress?.checkIns));
  if (d.duress) api.use('/me/duress', markBase, duressRoutes(d.duress.pins));
  api.use('/me/contacts', markBase, contactRoutes(d.store, d.contactIds));
  if (d.revocations) api.use('/me/tokens', markBase, ownTokenRoutes(d.revocations));
  if (d.personal) api.use('/me', markBase, personalDataRoutes(d.personal));
  // every moderator read of a person's data is audited, whatever else is mounted
  const access = new AccessAudit(d.store);
  if (d.location) api.use('/admin', markBase, adminOnly, adminLocationRoutes(d.location, access));
  if (d.safety)
    api
      .use('/sos', markBase, sosRoutes(d.safety.panic))
      .use('/incidents', markBase, ownIncidentRoutes(d.safety.panic, d.location))
      .use('/me/notifications', markBase, notificationRoutes(d.safety.notifications));
  api.use('/admin', markBase, adminOnly, adminRoutes(d.incidents, d.timers, access));
  if (d.moderation) api.use('/admin', markBase, adminOnly, moderationRoutes(d.moderation, d.incidents));
  if (d.revocations) api.use('/admin', markBase, adminOnly, adminTokenRoutes(d.revocations));
  app.use('/v1', api);

  app.use(notFoundHandler);
  app.use(errorHandler(d.log));
  return app;
}
