/**
 * The entry: `node dist/main.js` (and `startVigil`, which tests and scripts call). The
 * composition root is this file and src/compose/: config → adapters (compose/adapters.ts) →
 * services and workers (compose/services.ts, compose/workers.ts) → HTTP + Socket.IO + ticks.
 * Shutdown runs in reverse order of start-up.
 */
import type { Express } from 'express';
import { pathToFileURL } from 'node:url';
import type { LocationService } from './app/location.js';
import { openAdapters, type AdapterOverrides } from './compose/adapters.js';
import { startServices } from './compose/services.js';
import { loadConfig, type Config } from './config.js';
import type { Lock } from './lock/port.js';
import { createLogger, type Logger } from './log.js';
import { createMetrics, type Metrics } from './metrics.js';
import type { Carrier } from './sms/port.js';
import type { Store } from './store/port.js';
import type { Dispatcher } from './worker/dispatcher.js';
import type { RetentionJob } from './worker/retention.js';
import type { Scheduler } from './worker/scheduler.js';
import type { Sweeper } from './worker/sweeper.js';

export interface Vigil {
  config: Config;
  /** the Express app (for tests that walk its routes) */
  app: Express;
  url: string;
  port: number;
  /** the port of the metrics listener when METRICS_PORT is set; absent: `/metrics` is on `port` */
  metricsPort?: number;
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
  /** disconnects every socket of a person on every replica (a revoked moderator) */
  disconnectUser(userId: string): void;
  /** start the sweep and dispatch ticks; until then nothing sweeps or sends on its own */
  startTicks(): void;
  /** graceful stop; safe to call twice */
  stop(): Promise<void>;
}

/** Things a caller (tests, scripts) may supply instead of what config selects. */
export interface Overrides extends AdapterOverrides {
  logger?: Logger;
}

export async function startVigil(config: Config, o: Overrides = {}): Promise<Vigil> {
  const log = o.logger ?? createLogger({ level: config.logLevel, base: { replica: config.replicaId } });
  const metrics = createMetrics({ replica: config.replicaId, storeCacheMs: config.metrics.storeCacheMs });

  const cleanups: (() => Promise<void>)[] = [];
  const onClose = (step: () => Promise<void>) => void cleanups.push(step);
  const closeAll = async () => {
    for (const c of cleanups.reverse()) await c().catch((err: unknown) => log.error({ err }, 'shutdown step failed'));
    cleanups.length = 0;
  };
  let draining = false;
  try {
    const adapters = await openAdapters(config, log, metrics, o, onClose);
    const services = await startServices(config, adapters, { log, metrics, draining: () => draining }, onClose);
    const { store, lock, carrier } = adapters;
    const { port, scheduler, flusher } = services;
    const shownHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    const url = `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${port}`;
    log.info(
      {
        url,
        mode: config.mode,
        store: config.mongodbUri ? 'mongodb' : 'sqlite',
        lock: config.redisUrl ? 'redis' : 'in-process',
        carrier: carrier.name,
        ...(services.metricsPort === undefined ? {} : { metricsPort: services.metricsPort }),
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
      app: services.app,
      url,
      port,
      ...(services.metricsPort === undefined ? {} : { metricsPort: services.metricsPort }),
      store,
      lock,
      carrier,
      metrics,
      log,
      sweeper: services.sweeper,
      dispatcher: services.dispatcher,
      scheduler,
      location: services.location,
      retention: services.retention,
      disconnectUser: services.disconnectUser,
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
