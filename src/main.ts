/**
 * Composition root: config → adapters → services → HTTP + Socket.IO + ticks.
 * The only module that knows every adapter. Shutdown runs in reverse order of start-up.
 */
import { createServer, type Server } from 'node:http';
import type { TracerProvider } from '@opentelemetry/api';
import type { Express } from 'express';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { IncidentService } from './app/incidents.js';
import { LocationService } from './app/location.js';
import { newId } from './app/ids.js';
import { NotificationService } from './app/notifications.js';
import { PanicService } from './app/panic.js';
import { contactsTextedNotification } from './domain/notification.js';
import { Warner } from './worker/warner.js';
import { ModerationService } from './app/moderation.js';
import { SmsBudget } from './app/sms-budget.js';
import { TimerService } from './app/timers.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { makeLimits } from './domain/limits.js';
import { consoleRouter } from './console/router.js';
import { createApp } from './http/app.js';
import { openapiDocument } from './http/openapi.js';
import { answerClientErrors } from './http/client-errors.js';
import { createRateLimits } from './http/rate-limit.js';
import { connectRedisLimitStores } from './http/rate-limit-redis.js';
import { receiptRoutes } from './http/routes/receipts.js';
import { InProcessLock } from './lock/in-process-lock.js';
import type { Lock } from './lock/port.js';
import { MemoryFixes } from './location/memory-fixes.js';
import type { LatestFixes } from './location/port.js';
import { RedisFixes } from './location/redis-fixes.js';
import { createLogger, type Logger } from './log.js';
import { createMetrics, type Metrics } from './metrics.js';
import { attachLocationMessages } from './realtime/location-socket.js';
import { createRealtime, type Realtime } from './realtime/server.js';
import { RedisLock } from './lock/redis-lock.js';
import { connectRedisFanout, type RedisFanout } from './realtime/redis-fanout.js';
import { ConsoleCarrier } from './sms/console.js';
import { FailoverCarrier } from './sms/failover.js';
import { Fast2SmsCarrier } from './sms/fast2sms.js';
import type { Carrier } from './sms/port.js';
import { RateLimitedCarrier, type Pacing } from './sms/rate-limited.js';
import { TwilioCarrier } from './sms/twilio.js';
import type { Store } from './store/port.js';
import { MongoStore } from './store/mongo/mongo-store.js';
import { SqliteStore } from './store/sqlite/sqlite-store.js';
import { tracerProviderFor } from './telemetry/provider.js';
import { createTracing, type Tracing } from './telemetry/tracing.js';
import { reportingDeadlines } from './worker/deadline-events.js';
import { Dispatcher } from './worker/dispatcher.js';
import { Escalator } from './worker/escalator.js';
import { LocationFlusher } from './worker/location-flush.js';
import { RetentionJob } from './worker/retention.js';
import { Scheduler } from './worker/scheduler.js';
import { SweepBacklog } from './worker/sweep-backlog.js';
import { Sweeper } from './worker/sweeper.js';

export interface Vigil {
  config: Config;
  /** the Express app (for tests that walk its routes) */
  app: Express;
  url: string;
  port: number;
  store: Store;
  lock: Lock;
  carrier: Carrier;
  metrics: Metrics;
  log: Logger;
  sweeper: Sweeper;
  dispatcher: Dispatcher;
  scheduler: Scheduler;
  /** live location (tests flush it by hand) */
  location: LocationService;
  /** the daily retention job (tests run it by hand) */
  retention: RetentionJob;
  /** start the sweep and dispatch ticks; until then nothing sweeps or sends on its own */
  startTicks(): void;
  /** graceful stop; safe to call twice */
  stop(): Promise<void>;
}

/** Things a caller (tests, scripts) may supply instead of what config selects. */
export interface Overrides {
  carrier?: Carrier;
  lock?: Lock;
  logger?: Logger;
  /** traces go here instead of where config says (tests: an in-memory exporter); the caller shuts it down */
  tracerProvider?: TracerProvider;
}

async function openStore(config: Config, log: Logger): Promise<Store> {
  if (config.mongodbUri) {
    const uri = config.mongodbUri;
    const store = await MongoStore.connect({ uri, ...config.mongodb }).catch((err: unknown) => {
      throw new ConfigError(`MONGODB_URI: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    });
    log.info({ db: config.mongodb.dbName ?? '(from the URI)', writeConcern: config.mongodb.writeConcern }, 'MongoDB store connected');
    return store;
  }
  log.info({ file: config.sqliteFile }, 'embedded SQLite store');
  return SqliteStore.open({ file: config.sqliteFile, busyTimeoutMs: config.sqliteBusyTimeoutMs, synchronous: config.sqliteSynchronous });
}

/** The latest-fix cache: Redis in cluster mode (shared by the replicas), memory when embedded. */
async function openLatestFixes(config: Config, log: Logger): Promise<LatestFixes> {
  if (!config.redisUrl) return new MemoryFixes(config.location.cacheTtlMs);
  let warned = false;
  const fixes = await RedisFixes.connect({
    url: config.redisUrl,
    ttlMs: config.location.cacheTtlMs,
    onError: (err) => {
      if (!warned) log.warn({ err: err.message }, 'latest-fix cache: connection error (fixes fall back to the store while it lasts)');
      warned = true;
    },
  }).catch((err: unknown) => {
    throw new ConfigError(`REDIS_URL: cannot reach Redis at start-up (${err instanceof Error ? err.message : String(err)})`, {
      cause: err,
    });
  });
  return fixes;
}

async function openLock(config: Config, log: Logger, store: Store): Promise<Lock> {
  // fences continue above the store's record after a restart of the process or of Redis
  const fenceFloor = () => store.maxRecordedFence();
  if (!config.redisUrl) return new InProcessLock(Date.now, fenceFloor);
  let warned = false;
  const lock = await RedisLock.connect({
    url: config.redisUrl,
    replicaId: config.replicaId,
    fenceFloor,
    onError: (err) => {
      if (!warned) log.warn({ err: err.message }, 'redis lock: connection error (sweeping continues without the lock while it lasts)');
      warned = true;
    },
  }).catch((err: unknown) => {
    throw new ConfigError(`REDIS_URL: cannot reach Redis at start-up (${err instanceof Error ? err.message : String(err)})`, {
      cause: err,
    });
  });
  log.info('redis lock connected');
  return lock;
}

/** A carrier limited to `perSecond` starts per second (0: as it is). */
const paced = (c: Carrier, perSecond: number): Carrier => (perSecond > 0 ? new RateLimitedCarrier(c, perSecond) : c);

/**
 * Console unless a carrier is configured; with both, the primary fails over to the other.
 * Each carrier keeps its own send rate; the dispatcher paces its claims by the primary's.
 */
function chooseCarrier(config: Config, log: Logger, metrics: Metrics, tracing: Tracing): { carrier: Carrier; pacing?: Pacing } {
  const { twilio, fast2sms, primary, failover, maxPerSecond } = config.sms;
  const t = twilio ? paced(new TwilioCarrier({ ...twilio, tracing }), maxPerSecond.twilio) : undefined;
  const f = fast2sms ? paced(new Fast2SmsCarrier(fast2sms), maxPerSecond.fast2sms) : undefined;
  const pacingOf = (c: Carrier | undefined) => (c instanceof RateLimitedCarrier ? c : undefined);
  if (t && f) {
    const [first, second] = primary === 'fast2sms' ? [f, t] : [t, f];
    const carrier = new FailoverCarrier(first, second, {
      ...failover,
      onStateChange: (state) => {
        metrics.carrierCircuit.set(state === 'closed' ? 0 : state === 'open' ? 1 : 0.5);
        log.warn({ state, primary: first.name, secondary: second.name }, 'carrier circuit changed state');
      },
    });
    return { carrier, pacing: pacingOf(first) };
  }
  const one = t ?? f;
  return one ? { carrier: one, pacing: pacingOf(one) } : { carrier: new ConsoleCarrier(log) };
}

export async function startVigil(config: Config, o: Overrides = {}): Promise<Vigil> {
  const log = o.logger ?? createLogger({ level: config.logLevel, base: { replica: config.replicaId } });
  const metrics = createMetrics({ replica: config.replicaId });
  const limits = makeLimits(config.limits);

  const cleanups: (() => Promise<void>)[] = [];
  const closeAll = async () => {
    for (const c of cleanups.reverse()) await c().catch((err: unknown) => log.error({ err }, 'shutdown step failed'));
    cleanups.length = 0;
  };
  try {
    const store = await openStore(config, log);
    cleanups.push(() => store.close());
    if (store instanceof SqliteStore) metrics.watchSqliteWrites(() => store.writeGateStats());
    // built after the store so that it is shut down (its last spans flushed) just before the store closes
    const ownProvider = o.tracerProvider ? undefined : tracerProviderFor(config.tracing);
    if (ownProvider) {
      cleanups.push(() => ownProvider.shutdown());
      log.info(
        { exporter: config.tracing.exporter, url: config.tracing.exporter === 'otlp' ? config.tracing.url : undefined },
        'tracing on',
      );
    }
    const tracing = createTracing(o.tracerProvider ?? ownProvider);
    metrics.observeStore(store);
    const lock = o.lock ?? (await openLock(config, log, store));
    cleanups.push(() => lock.close());
    const chosen = o.carrier ? { carrier: o.carrier } : chooseCarrier(config, log, metrics, tracing);
    const carrier: Carrier = chosen.carrier;
    const latestFixes = await openLatestFixes(config, log);
    cleanups.push(() => latestFixes.close());

    let fanout: RedisFanout | undefined;
    if (config.redisUrl) {
      const f = await connectRedisFanout(config.redisUrl, log, { onDropped: (n, reason) => metrics.fanoutDropped.inc({ reason }, n) });
      fanout = f;
      cleanups.push(() => f.close());
    }
    let draining = false;
    // Express must be the server's own request handler before Socket.IO attaches: Socket.IO
    // then takes its /socket.io/ requests and passes every other request on to Express.
    let app: Express | undefined;
    const http: Server = createServer(
      {
        headersTimeout: config.http.headersTimeoutMs,
        requestTimeout: config.http.requestTimeoutMs,
        keepAliveTimeout: config.http.keepAliveTimeoutMs,
        // how often Node enforces the two timeouts above (default 30 s)
        connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(config.http.headersTimeoutMs / 4))),
      },
      (req, res) => {
        if (app) app(req, res);
        else res.writeHead(503).end();
      },
    );
    // connection caps: slow or idle clients cannot hold sockets forever
    http.maxConnections = config.http.maxConnections > 0 ? config.http.maxConnections : Infinity;
    answerClientErrors(http);
    const realtime: Realtime = createRealtime(http, {
      jwtSecret: config.jwtSecret,
      tokenPolicy: config.tokens,
      perUser: config.sockets.perUser,
      metrics,
      log,
      fanout,
    });
    let limitStores: Awaited<ReturnType<typeof connectRedisLimitStores>> | undefined;
    if (config.redisUrl) {
      const l = await connectRedisLimitStores(config.redisUrl, log);
      limitStores = l;
      cleanups.push(() => l.close());
    }
    const rateLimits = createRateLimits(config.rateLimit, log, limitStores?.storeFor);
    cleanups.push(async () => rateLimits.close());
    const smsBudget = new SmsBudget(
      store,
      { maxPerIncident: config.sms.maxPerIncident, maxPerUserPerDay: config.sms.maxPerUserPerDay },
      { log, metrics },
    );
    const location = new LocationService(
      store,
      latestFixes,
      realtime.publisher,
      smsBudget,
      {
        minIntervalMs: config.location.minIntervalMs,
        perMinute: config.location.perMinute,
        followUpMeters: config.location.followUpMeters,
        trailLimit: 500,
        flushMs: config.location.flushMs,
      },
      log,
      { inc: (outcome) => metrics.locationFixes.inc({ outcome }) },
    );
    attachLocationMessages(realtime.io, location, log);
    // a timer that ends (safe, cancelled, expired) has its buffered fixes stored at once
    const events = location.flushingOnEnd(realtime.publisher);
    // arming or extending here moves this replica's next wake-up earlier (the scheduler exists later)
    let onDeadline: (at: Date) => void = () => undefined;
    const timerEvents = reportingDeadlines(events, (at) => onDeadline(at));
    const timers = new TimerService(store, timerEvents, limits, metrics, smsBudget, tracing);
    const notifications = new NotificationService(store, realtime.publisher);
    const incidents = new IncidentService(store, realtime.publisher, metrics, notifications);
    const panic = new PanicService(store, realtime.publisher, metrics, smsBudget, tracing);
    const moderation = new ModerationService(store, realtime.publisher, metrics);
    const expressApp = createApp({
      store,
      timers,
      incidents,
      location,
      safety: { panic, notifications },
      moderation,
      metrics,
      log,
      tracing,
      jwtSecret: config.jwtSecret,
      tokenPolicy: config.tokens,
      bodyLimit: config.bodyLimit,
      rateLimit: rateLimits.middleware,
      trustProxy: config.trustProxy,
      draining: () => draining,
      openapi: openapiDocument(limits),
      extra: [
        { path: '/console', router: consoleRouter() },
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
      ],
    });
    app = expressApp;
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(config.port, config.host, () => resolve());
    });
    cleanups.push(async () => {
      await realtime.close();
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => http.closeAllConnections(), 2000);
        http.close(() => {
          clearTimeout(force);
          resolve();
        });
        http.closeIdleConnections();
      });
    });

    const escalator = new Escalator(store, events, metrics, log, smsBudget, tracing, {
      location,
      includeMeeting: config.location.sosIncludeMeeting,
    });
    const sweeper = new Sweeper(store, lock, escalator, metrics, log, {
      lockName: config.sweep.lockName,
      lockTtlMs: config.sweep.lockTtlMs,
      batchSize: config.sweep.batchSize,
      shards: config.sweep.shards,
      // better-sqlite3 is synchronous: concurrent groups would only run back to back in one turn of the event loop
      concurrency: config.mongodbUri ? config.sweep.concurrency : 1,
      maxEscalationAttempts: config.escalationMaxAttempts,
      graceMs: config.warning.graceMs,
      panics: panic,
      warnings: new Warner(store, realtime.publisher, notifications, { window: config.warning, batchSize: config.sweep.batchSize }),
      // a sweep starts at every deadline; the repairs and warnings need not run that often
      onceEveryMs: 500,
      // under a steady load a sweep starts at every deadline: keep the lease for the next one
      keepLeaseMs: config.sweep.keepLeaseMs,
    });
    // any replica's sweep behind, seen by every replica through the store: a deadline unclaimed 40 ms after it
    // passed (on time a sweep claims it within a few ms; the goal is p99 ≤ 100 ms), read at most every 20 ms.
    // 250 ms read every 100 ms reacted only once the sweep was already late (docs/performance-notes.md).
    const backlog = new SweepBacklog(store, { behindMs: 40 + config.warning.graceMs, refreshMs: 20 });
    const dispatcher = new Dispatcher(store, carrier, realtime.publisher, metrics, log, {
      maxInFlight: config.delivery.maxInFlight,
      leaseMs: config.delivery.leaseMs,
      retry: { maxAttempts: config.delivery.maxAttempts, baseMs: config.delivery.baseMs, capMs: config.delivery.capMs },
      tracing,
      pacing: chosen.pacing,
      onSosSent: (d) => notifications.recordInBackground(contactsTextedNotification({ id: d.incidentId, userId: d.userId }, newId('ntf'))),
      // a burst: incidents first (one writer, one event loop), then its texts; never more than 5 s of texts held back
      yieldTo: () => sweeper.escalatingBacklog() || backlog.behind(),
      yieldMaxMs: 5000,
    });
    const wake = config.sweep.wakeUps ? { store, maxAheadMs: config.sweep.lockTtlMs, keepLeaseMs: config.sweep.keepLeaseMs } : undefined;
    const retention = new RetentionJob(store, lock, metrics, log, { ...config.retention, lockTtlMs: config.sweep.lockTtlMs });
    const scheduler = new Scheduler(sweeper, dispatcher, metrics, log, config.sweep.cron, wake, {
      job: retention,
      cron: config.retention.cron,
    });
    onDeadline = (at) => scheduler.deadlineAt(at);
    cleanups.push(() => scheduler.stop());
    // stopped before the store closes: its last flush stores what this replica still buffers
    const flusher = new LocationFlusher(location, config.location.flushMs, log);
    cleanups.push(() => flusher.stop());

    const port = (http.address() as AddressInfo).port;
    const shownHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    const url = `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${port}`;
    log.info(
      {
        url,
        mode: config.mode,
        store: config.mongodbUri ? 'mongodb' : 'sqlite',
        lock: config.redisUrl ? 'redis' : 'in-process',
        carrier: carrier.name,
      },
      'Vigil is listening',
    );

    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= (async () => {
        draining = true;
        log.info('shutting down: readiness off, ticks stopping, sweep finishing');
        await closeAll();
        log.info('shutdown complete');
      })());
    let ticking = false;
    const startTicks = () => {
      if (ticking || stopping) return;
      ticking = true;
      scheduler.start();
      flusher.start();
    };
    return {
      config,
      app: expressApp,
      url,
      port,
      store,
      lock,
      carrier,
      metrics,
      log,
      sweeper,
      dispatcher,
      scheduler,
      location,
      retention,
      startTicks,
      stop,
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

async function runFromCommandLine(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  }
  const vigil = await startVigil(config).catch((err: unknown) => {
    process.stderr.write(`Vigil could not start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
  vigil.startTicks();
  if (config.mode === 'embedded') {
    process.stderr.write(
      `\nVigil is running on ${vigil.url} (embedded: ${config.sqliteFile})\n` +
        `Mint a development token:  npm run token -- --user alice [--admin] [--name "Alice"]\n` +
        `Then: curl -H "Authorization: Bearer <token>" ${vigil.url}/v1/timers\n\n`,
    );
  }
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    if (++signals > 1) {
      vigil.log.warn({ sig }, 'second signal: exiting now');
      process.exit(1);
    }
    const hard = setTimeout(() => {
      vigil.log.error('shutdown took longer than SHUTDOWN_TIMEOUT_MS; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    hard.unref();
    void vigil.stop().then(() => process.exit(0));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void runFromCommandLine();
}
