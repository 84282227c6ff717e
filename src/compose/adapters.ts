/**
 * Which adapter serves each port, as config says: the store (SQLite embedded, MongoDB with
 * MONGODB_URI), the lock, the latest-fix cache, the Socket.IO adapter and the rate-limit
 * counters (in-process, or Redis with REDIS_URL), the carriers, the trace exporter. The only
 * module that imports adapters (the `only-main-knows-adapters` rule of .dependency-cruiser.cjs).
 */
import type { TracerProvider } from '@opentelemetry/api';
import { ConfigError, type Config } from '../config.js';
import { contactIdKey, ContactIdKeyMismatch, type ContactIdKey } from '../domain/contact.js';
import type { LimitStoreFactory } from '../http/rate-limit.js';
import { connectRedisLimitStores } from '../http/rate-limit-redis.js';
import { InProcessLock } from '../lock/in-process-lock.js';
import type { Lock } from '../lock/port.js';
import { RedisLock } from '../lock/redis-lock.js';
import { MemoryFixes } from '../location/memory-fixes.js';
import type { LatestFixes } from '../location/port.js';
import { RedisFixes } from '../location/redis-fixes.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { connectRedisAdapter } from '../realtime/redis-adapter.js';
import type { Replicas } from '../realtime/replicas.js';
import { ConsoleCarrier } from '../sms/console.js';
import { FailoverCarrier } from '../sms/failover.js';
import { Fast2SmsCarrier } from '../sms/fast2sms.js';
import type { Carrier } from '../sms/port.js';
import { RateLimitedCarrier, type Pacing } from '../sms/rate-limited.js';
import { TwilioCarrier } from '../sms/twilio.js';
import { MongoStore } from '../store/mongo/mongo-store.js';
import type { Store } from '../store/port.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { tracerProviderFor } from '../telemetry/provider.js';
import { createTracing, type Tracing } from '../telemetry/tracing.js';

/** Adapters a caller (tests, scripts) may supply instead of what config selects. */
export interface AdapterOverrides {
  carrier?: Carrier;
  lock?: Lock;
  /** traces go here instead of where config says (tests: an in-memory exporter); the caller shuts it down */
  tracerProvider?: TracerProvider;
}

export interface Adapters {
  store: Store;
  lock: Lock;
  carrier: Carrier;
  /** the primary carrier's send rate, when limited: the dispatcher paces its claims by it */
  pacing?: Pacing;
  latestFixes: LatestFixes;
  /** cluster mode: the Socket.IO adapter to the other replicas */
  replicas?: Replicas;
  /** cluster mode: rate-limit counters shared by the replicas */
  limitStoreFor?: LimitStoreFactory;
  tracing: Tracing;
  /** the key the store's contact ids are derived with (re-keyed to it at start-up) */
  contactIds: ContactIdKey;
}

/** A step of the shutdown; they run in reverse order of registration. */
export type OnClose = (step: () => Promise<void>) => void;

/** Open every adapter, each closing step registered as soon as what it closes is open. */
export async function openAdapters(
  config: Config,
  log: Logger,
  metrics: Metrics,
  o: AdapterOverrides,
  onClose: OnClose,
): Promise<Adapters> {
  const store = await openStore(config, log);
  onClose(() => store.close());
  const contactIds = await rekeyContactIds(config, store, log);
  if (store instanceof SqliteStore) metrics.watchSqliteWrites(() => store.writeGateStats());
  // built after the store so that it is shut down (its last spans flushed) just before the store closes
  const ownProvider = o.tracerProvider ? undefined : tracerProviderFor(config.tracing);
  if (ownProvider) {
    onClose(() => ownProvider.shutdown());
    log.info({ exporter: config.tracing.exporter, url: config.tracing.exporter === 'otlp' ? config.tracing.url : undefined }, 'tracing on');
  }
  const tracing = createTracing(o.tracerProvider ?? ownProvider);
  metrics.observeStore(store, { graceMs: config.warning.graceMs, pageAfterSeconds: config.paging.unacknowledgedAfterSeconds });
  const lock = o.lock ?? (await openLock(config, log, store));
  onClose(() => lock.close());
  const { carrier, pacing } = o.carrier ? { carrier: o.carrier, pacing: undefined } : chooseCarrier(config, log, metrics, tracing);
  const latestFixes = await openLatestFixes(config, log);
  onClose(() => latestFixes.close());
  if (!config.redisUrl) return { store, lock, carrier, pacing, latestFixes, tracing, contactIds };

  // Redis was reached already (lock, fixes): what fails here is mostly a Redis before 7.0
  const replicas = await connectRedisAdapter(config.redisUrl, log, {
    onDropped: (n, reason) => metrics.fanoutDropped.inc({ reason }, n),
  }).catch((err: unknown) => {
    const why = err instanceof Error ? err.message : String(err);
    throw new ConfigError(`REDIS_URL: the Socket.IO Redis adapter cannot start (${why})`, { cause: err });
  });
  onClose(() => replicas.close());
  const limits = await connectRedisLimitStores(config.redisUrl, log);
  onClose(() => limits.close());
  return { store, lock, carrier, pacing, latestFixes, replicas, limitStoreFor: limits.storeFor, tracing, contactIds };
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

/**
 * Move the stored contact ids to CONTACT_ID_KEY (from the plain hash of earlier versions, or
 * from CONTACT_ID_KEY_PREVIOUS) before anything serves or dispatches: docs/security.md#contact-ids.
 */
async function rekeyContactIds(config: Config, store: Store, log: Logger): Promise<ContactIdKey> {
  const key = contactIdKey(config.contactIds.key, config.contactIds.previous);
  let people = 0;
  const r = await store
    .rekeyContactIds(key, (s) => {
      if (s.step === 'person' && ++people % 1000 === 0) log.info({ people }, 'contact id re-key: progress');
    })
    .catch((err: unknown) => {
      if (err instanceof ContactIdKeyMismatch) throw new ConfigError(err.message, { cause: err });
      throw err;
    });
  if (r.from !== r.to) log.info(r, 'contact ids re-keyed to CONTACT_ID_KEY');
  if (config.contactIds.previous) log.warn('CONTACT_ID_KEY_PREVIOUS is set: once every replica runs with the new key, remove it');
  return key;
}

const unreachable = (err: unknown) =>
  new ConfigError(`REDIS_URL: cannot reach Redis at start-up (${err instanceof Error ? err.message : String(err)})`, { cause: err });

/** The latest-fix cache: Redis in cluster mode (shared by the replicas), memory when embedded. */
async function openLatestFixes(config: Config, log: Logger): Promise<LatestFixes> {
  if (!config.redisUrl) return new MemoryFixes(config.location.cacheTtlMs);
  let warned = false;
  return RedisFixes.connect({
    url: config.redisUrl,
    ttlMs: config.location.cacheTtlMs,
    onError: (err) => {
      if (!warned) log.warn({ err: err.message }, 'latest-fix cache: connection error (fixes fall back to the store while it lasts)');
      warned = true;
    },
  }).catch((err: unknown) => {
    throw unreachable(err);
  });
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
    throw unreachable(err);
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
