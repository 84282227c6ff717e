/**
 * The services wired to the adapters: the HTTP server with Socket.IO and the Express app, the
 * use cases the API and the workers share (timers, incidents, panic, moderation, location,
 * the SMS budget), the workers (./workers.ts), the scheduler of the ticks and the location
 * flusher. Knows ports only; which adapter serves each is ./adapters.ts's choice.
 */
import { DuressCheckIns, DuressPins } from '../app/duress.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { AllClear } from '../app/all-clear.js';
import { ContactStates } from '../app/contact-states.js';
import { IncidentService } from '../app/incidents.js';
import { newId } from '../app/ids.js';
import { LocationService, type LocationCounters } from '../app/location.js';
import { ModerationService } from '../app/moderation.js';
import { NotificationService } from '../app/notifications.js';
import { PanicService } from '../app/panic.js';
import { SmsBudget } from '../app/sms-budget.js';
import { TimerService } from '../app/timers.js';
import { TokenRevocations } from '../app/token-revocations.js';
import { PersonalDataService } from '../app/personal-data.js';
import type { Config } from '../config.js';
import { consoleRouter } from '../console/router.js';
import { makeLimits } from '../domain/limits.js';
import type { Delivery } from '../domain/delivery.js';
import { isDuressIncidentId } from '../domain/incident.js';
import { contactsTextedNotification, type Unreachable } from '../domain/notification.js';
import { createApp } from '../http/app.js';
import { clientAddressOf } from '../http/client-address.js';
import { answerClientErrors } from '../http/client-errors.js';
import { openapiDocument } from '../http/openapi.js';
import { startMetricsListener } from '../http/metrics-endpoint.js';
import { createRateLimits } from '../http/rate-limit.js';
import { receiptRoutes } from '../http/routes/receipts.js';
import { replyRoutes } from '../http/routes/replies.js';
import { ContactReplies } from '../app/contact-replies.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { guardHandshakes } from '../realtime/handshakes.js';
import { attachLocationMessages } from '../realtime/location-socket.js';
import { createRealtime } from '../realtime/server.js';
import { reportingDeadlines } from '../worker/deadline-events.js';
import type { Dispatcher } from '../worker/dispatcher.js';
import { LocationFlusher } from '../worker/location-flush.js';
import { RetentionJob } from '../worker/retention.js';
import { Scheduler } from '../worker/scheduler.js';
import type { Sweeper } from '../worker/sweeper.js';
import { Warner } from '../worker/warner.js';
import type { Adapters, OnClose } from './adapters.js';
import { HTTP_FORCE_CLOSE_MS, httpTimeoutCheckMs, METRICS_MAX_CONNECTIONS, READY_CACHE_MS, TRAIL_LIMIT } from './tuning.js';
import { buildWorkers, workerSettings } from './workers.js';

export interface Services {
  /** the Express app (for tests that walk its routes) */
  app: Express;
  /** the port the HTTP server listens on */
  port: number;
  /** the port of the metrics listener (METRICS_PORT); absent: `/metrics` is on `port` */
  metricsPort?: number;
  sweeper: Sweeper;
  dispatcher: Dispatcher;
  scheduler: Scheduler;
  location: LocationService;
  retention: RetentionJob;
  flusher: LocationFlusher;
  /** every socket of a person, on every replica (a moderator whose access was revoked) */
  disconnectUser(userId: string): void;
}

/**
 * Wire every service to `adapters` and listen; each closing step is registered once what it
 * closes runs. `draining` turns readiness off (shutdown began). Ticks start later (`Scheduler.start`).
 */
export async function startServices(
  config: Config,
  adapters: Adapters,
  { log, metrics, draining }: { log: Logger; metrics: Metrics; draining: () => boolean },
  onClose: OnClose,
): Promise<Services> {
  const { store, lock, carrier, pacing, latestFixes, replicas, limitStoreFor, tracing, contactIds } = adapters;
  const limits = makeLimits(config.limits);
  // Express must be the server's own request handler before Socket.IO attaches: Socket.IO
  // then takes its /socket.io/ requests and passes every other request on to Express.
  let app: Express | undefined;
  const http: Server = createServer(
    {
      headersTimeout: config.http.headersTimeoutMs,
      requestTimeout: config.http.requestTimeoutMs,
      keepAliveTimeout: config.http.keepAliveTimeoutMs,
      connectionsCheckingInterval: httpTimeoutCheckMs(config.http.headersTimeoutMs),
    },
    (req, res) => {
      if (app) app(req, res);
      else res.writeHead(503).end();
    },
  );
  // connection caps: slow or idle clients cannot hold sockets forever
  http.maxConnections = config.http.maxConnections > 0 ? config.http.maxConnections : Infinity;
  answerClientErrors(http);
  // a revocation cuts the person's sockets off on every replica (the realtime layer exists next)
  const revocations = new TokenRevocations(store, { cacheMs: config.revocationCacheMs });
  const realtime = createRealtime(http, {
    jwtSecret: config.jwtSecret,
    tokenPolicy: config.tokens,
    perUser: config.sockets.perUser,
    authTimeoutMs: config.sockets.authTimeoutMs,
    maxMessageBytes: config.sockets.maxMessageBytes,
    revocation: revocations,
    recheckMs: config.sockets.recheckMs,
    metrics,
    log,
    replicas,
  });
  revocations.onRevoked = (userId) => realtime.disconnectUser(userId);
  const rateLimits = createRateLimits(config.rateLimit, log, limitStoreFor);
  onClose(async () => rateLimits.close());
  const smsBudget = new SmsBudget(
    store,
    { maxPerIncident: config.sms.maxPerIncident, maxPerUserPerDay: config.sms.maxPerUserPerDay },
    { log, metrics },
  );
  const locationCounters = { inc: (outcome: Parameters<LocationCounters['inc']>[0]) => metrics.locationFixes.inc({ outcome }) };
  const location = new LocationService(
    store,
    latestFixes,
    realtime.publisher,
    smsBudget,
    {
      minIntervalMs: config.location.minIntervalMs,
      perMinute: config.location.perMinute,
      followUpMeters: config.location.followUpMeters,
      trailLimit: TRAIL_LIMIT,
      flushMs: config.location.flushMs,
    },
    log,
    locationCounters,
  );
  attachLocationMessages(realtime.io, location, log, { perMinute: config.location.perMinute, counters: locationCounters });
  // a timer that ends (safe, cancelled, expired) has its buffered fixes stored at once
  const events = location.flushingOnEnd(realtime.publisher);
  // arming or extending here moves this replica's next wake-up earlier (the scheduler exists later)
  let onDeadline: (at: Date) => void = () => undefined;
  const timerEvents = reportingDeadlines(events, (at) => onDeadline(at));
  const timers = new TimerService(store, timerEvents, limits, metrics, smsBudget, tracing);
  const notifications = new NotificationService(store, realtime.publisher);
  const incidents = new IncidentService(store, realtime.publisher, metrics, notifications, {
    allClear: new AllClear(store, realtime.publisher, smsBudget, () => metrics.casConflicts.inc({ command: 'resolve' })),
    notifyContacts: config.sms.resolveNotifiesContacts,
  });
  const panic = new PanicService(store, events, metrics, smsBudget, tracing, { location, duressTextsContacts: config.duress.textContacts });
  const duressPins = new DuressPins(store);
  const duress = {
    pins: duressPins,
    checkIns: new DuressCheckIns(duressPins, timers, panic, (err, timer) =>
      log.error({ err, timer }, 'opening the duress SOS failed after the check-in; it is recorded as owed, the sweep opens it'),
    ),
  };
  const moderation = new ModerationService(store, realtime.publisher, metrics);
  const personal = new PersonalDataService(store, (userId) => contactIds.pseudonym(userId));
  const expressApp = createApp({
    store,
    contactIds,
    timers,
    duress,
    incidents,
    location,
    safety: { panic, notifications },
    moderation,
    personal,
    metrics,
    log,
    tracing,
    jwtSecret: config.jwtSecret,
    tokenPolicy: config.tokens,
    revocations,
    bodyLimit: config.bodyLimit,
    rateLimit: rateLimits.middleware,
    trustProxy: config.trustProxy,
    draining,
    readyCacheMs: READY_CACHE_MS,
    scrape: { onMainPort: config.metrics.port === undefined, token: config.metrics.token },
    openapi: openapiDocument(limits),
    extra: [
      { path: '/console', router: consoleRouter({ pageAfterSeconds: config.paging.unacknowledgedAfterSeconds }) },
      {
        path: '/v1/receipts',
        router: receiptRoutes({
          store,
          events: realtime.publisher,
          authToken: config.sms.twilio?.authToken,
          publicUrl: config.sms.twilio?.statusCallbackUrl,
          log,
          metrics,
          bodyLimit: config.bodyLimit,
        }),
      },
      {
        path: '/v1/replies',
        router: replyRoutes({
          replies: new ContactReplies(store, contactIds, realtime.publisher, notifications),
          authToken: config.sms.twilio?.authToken,
          publicUrl: config.sms.twilio?.inboundUrl,
          now: () => new Date(),
          log,
          bodyLimit: config.bodyLimit,
        }),
      },
    ],
  });
  // a Socket.IO handshake spends the budget of its address, as a request without a token does,
  // and the sockets never hold the connections kept for plain HTTP (HTTP_RESERVED_CONNECTIONS)
  const addressOf = clientAddressOf(expressApp);
  guardHandshakes(realtime.io, {
    charge: (req) => rateLimits.chargeAddress(addressOf(req)),
    maxConnections: config.sockets.maxConnections,
    onRefused: (reason) => metrics.socketRefusals.inc({ reason }),
  });
  // the scrape's own listener (METRICS_PORT): opened before the API's and closed after it, so the
  // last scrapes of a draining replica still answer
  let metricsPort: number | undefined;
  if (config.metrics.port !== undefined) {
    const listener = await startMetricsListener({
      port: config.metrics.port,
      host: config.host,
      registry: metrics.registry,
      token: config.metrics.token,
      maxConnections: METRICS_MAX_CONNECTIONS,
      headersTimeoutMs: config.http.headersTimeoutMs,
      requestTimeoutMs: config.http.requestTimeoutMs,
      keepAliveTimeoutMs: config.http.keepAliveTimeoutMs,
      onError: (err) => log.error({ err }, 'a metrics scrape failed'),
    });
    onClose(() => listener.close());
    metricsPort = listener.port;
  }

  app = expressApp;
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(config.port, config.host, () => resolve());
  });
  onClose(async () => {
    await realtime.close();
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => http.closeAllConnections(), HTTP_FORCE_CLOSE_MS);
      http.close(() => {
        clearTimeout(force);
        resolve();
      });
      http.closeIdleConnections();
    });
  });

  const warnings = new Warner(store, realtime.publisher, notifications, { window: config.warning, batchSize: config.sweep.batchSize });
  // the inbox is the phone's: a duress incident's texts are never recorded there
  const onSosSent = async (d: { incidentId: string; userId: string }) =>
    isDuressIncidentId(d.incidentId)
      ? undefined
      : notifications.recordInBackground(contactsTextedNotification({ id: d.incidentId, userId: d.userId }, newId('ntf')));
  const contactStates = new ContactStates(store, notifications);
  const onUnreachable = (d: Delivery, why: Unreachable) => contactStates.unreachable(d, why);
  const { sweeper, dispatcher } = buildWorkers(
    { store, lock, carrier, metrics, log, events, smsBudget, tracing },
    workerSettings(config, { panics: panic, warnings, pacing, onSosSent, onUnreachable, location }),
  );
  const { sweep } = config;
  const wake = sweep.wakeUps
    ? { store, maxAheadMs: sweep.lockTtlMs, keepLeaseMs: sweep.keepLeaseMs, graceMs: config.warning.graceMs }
    : undefined;
  const retention = new RetentionJob(store, lock, metrics, log, { ...config.retention, lockTtlMs: sweep.lockTtlMs });
  const scheduler = new Scheduler(sweeper, dispatcher, metrics, log, sweep.cron, wake, { job: retention, cron: config.retention.cron });
  onDeadline = (at) => scheduler.deadlineAt(at);
  onClose(() => scheduler.stop());
  // stopped before the store closes: its last flush stores what this replica still buffers
  const flusher = new LocationFlusher(location, config.location.flushMs, log);
  onClose(() => flusher.stop());

  const port = (http.address() as AddressInfo).port;
  const disconnectUser = (userId: string) => realtime.disconnectUser(userId);
  return { app: expressApp, port, metricsPort, sweeper, dispatcher, scheduler, location, retention, flusher, disconnectUser };
}
