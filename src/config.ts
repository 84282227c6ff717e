/**
 * Environment → typed, validated configuration. The only module that reads
 * process.env (through `loadConfig(env)`). A bad value stops start-up with a message
 * naming the variable.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { publicKeysFromJwks, publicKeysFromPem, type PublicKey } from './auth/keys.js';
import { hs256Key, type TokenPolicy, type VerifyKey } from './auth/tokens.js';
import { CLUSTER_MAX_IN_FLIGHT, EMBEDDED_MAX_IN_FLIGHT, EnvSchema, type Env } from './config/env.js';
import { secretWeakness } from './config/secret-strength.js';

export { EnvSchema, type Env };

export interface Config {
  mode: 'embedded' | 'cluster';
  port: number;
  host: string;
  dataDir: string;
  sqliteFile: string;
  /** how long a SQLite write waits for another process's lock before answering 503 */
  sqliteBusyTimeoutMs: number;
  sqliteSynchronous: 'full' | 'normal';
  mongodbUri?: string;
  mongodb: {
    dbName?: string;
    writeConcern: 'majority' | number;
    writeTimeoutMs: number;
    serverSelectionTimeoutMs: number;
    operationTimeoutMs: number;
  };
  redisUrl?: string;
  /**
   * The HS256 secret: JWT_SECRET, or generated into DATA_DIR when embedded and no public key
   * is configured. Absent when only public keys verify tokens (replicas hold no signing key).
   */
  jwtSecret?: string;
  /** the HMAC key of contact ids (CONTACT_ID_KEY, or generated into DATA_DIR when embedded) and the one it replaces */
  contactIds: { key: string; previous?: string };
  logLevel: Env['LOG_LEVEL'];
  replicaId: string;
  limits: { minSeconds: number; maxSeconds: number; maxExtensions: number; maxTotalSeconds: number };
  sweep: {
    cron: string;
    wakeUps: boolean;
    /** 0 when off (and always with wake-ups off) */
    keepLeaseMs: number;
    batchSize: number;
    shards: number;
    concurrency: number;
    lockName: string;
    lockTtlMs: number;
  };
  /** failed escalations of one timer before it is dead-lettered */
  escalationMaxAttempts: number;
  /** the nudge before the SOS (0 = off) and the wait after the deadline before it (ms) */
  warning: { beforeMs: number; graceMs: number };
  /** anonymise closed records after `days` (0 = never), daily at `cron`, bounded per run (docs/privacy.md) */
  retention: { days: number; cron: string; batchSize: number; maxBatches: number; lockName: string };
  delivery: { maxAttempts: number; baseMs: number; capMs: number; leaseMs: number; maxInFlight: number };
  shutdownTimeoutMs: number;
  bodyLimit: string;
  sms: SmsConfig;
  tracing: TracingConfig;
  rateLimit: RateLimitConfig;
  /** Express `trust proxy`: which hops may set X-Forwarded-For (the per-IP limit keys on the result) */
  trustProxy: boolean | number | string[];
  http: HttpLimits;
  sockets: SocketLimits;
  /** how long a read revocation stamp serves requests on this replica (ms) */
  revocationCacheMs: number;
  /** what a token must be to be accepted, and the keys besides `jwtSecret` that verify it */
  tokens: TokenPolicy;
  location: LocationConfig;
  metrics: MetricsConfig;
  /** an open incident nobody acknowledged for this long pages the on-call (alert, console cue) */
  paging: { unacknowledgedAfterSeconds: number };
  /** a check-in or cancel with the duress PIN: whether the contacts are texted besides paging the moderators */
  duress: { textContacts: boolean };
}

/** Where Prometheus scrapes, and what a scrape may cost the store. */
export interface MetricsConfig {
  /** a listener of its own for `/metrics` (0: any free port); absent: `/metrics` on the main port */
  port?: number;
  /** `Authorization: Bearer <token>` required to scrape */
  token?: string;
  /** the store-wide gauges are read at most once per this long (0: every scrape) */
  storeCacheMs: number;
}

export interface RateLimitConfig {
  windowMs: number;
  perPerson: number;
  /** safe / cancel / extend: their own budget, never spent by other routes */
  checkInsPerPerson: number;
  /** requests without a valid token, per client address */
  perIp: number;
  /** how long a refusal is held before it is answered (0: at once) */
  holdMs: number;
  /** at most this many refusals held at once; beyond it they are answered at once */
  maxHeld: number;
  /** a Redis rate-limit call slower than this counts as Redis being down */
  redisTimeoutMs: number;
}

export interface HttpLimits {
  /** 0: no cap */
  maxConnections: number;
  headersTimeoutMs: number;
  /** the whole request, body included, must arrive within this */
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

export interface SocketLimits {
  /** Socket.IO connections one person may hold on this replica */
  perUser: number;
  /** connections Socket.IO may hold on this replica (HTTP_MAX_CONNECTIONS − HTTP_RESERVED_CONNECTIONS); absent: no cap */
  maxConnections?: number;
  /** a connection not authenticated within this is closed (ms) */
  authTimeoutMs: number;
  /** largest message (WebSocket frame, long-polling body) in bytes */
  maxMessageBytes: number;
  /** open sockets re-checked (expiry, revocation) this often (ms) */
  recheckMs: number;
}

export interface LocationConfig {
  /** how often each replica stores the fixes it received (ms) */
  flushMs: number;
  /** at most one kept fix per person per this long (ms) */
  minIntervalMs: number;
  /** at most this many fixes per person per minute */
  perMinute: number;
  /** one `moved` text to the contacts beyond this distance from where the SOS said (m) */
  followUpMeters: number;
  /** time to live of the latest fix in Redis (ms) */
  cacheTtlMs: number;
  /** the SOS text names whom the person was meeting */
  sosIncludeMeeting: boolean;
}

/** Off unless an OTLP endpoint or `OTEL_TRACES_EXPORTER=otlp` is set. */
export type TracingConfig =
  | { exporter: 'none' }
  | {
      exporter: 'otlp';
      /** the full traces URL (…/v1/traces) */
      url: string;
      headers: Record<string, string>;
      timeoutMs: number;
      /** `service.name` of every span (OTEL_SERVICE_NAME, default `vigil`) */
      serviceName: string;
      /** `service.instance.id`: the replica */
      instanceId: string;
    };

export interface SmsConfig {
  primary: 'twilio' | 'fast2sms';
  twilio?: {
    accountSid: string;
    authToken: string;
    from: string;
    statusCallbackUrl?: string;
    /** the public URL of the replies webhook (TWILIO_INBOUND_URL) */
    inboundUrl?: string;
    baseUrl?: string;
    timeoutMs: number;
    /** PEM file of the CAs its TLS connections trust (TWILIO_CA_BUNDLE) */
    caBundleFile?: string;
    /** HTTP_PROXY: requests go through the twilio library's own path, which honours it */
    httpProxy?: string;
  };
  fast2sms?: { apiKey: string; baseUrl?: string; timeoutMs: number };
  failover: { threshold: number; openMs: number };
  /** sends started per second per carrier; 0 = no limit */
  maxPerSecond: { twilio: number; fast2sms: number };
  maxPerIncident: number;
  maxPerUserPerDay: number;
  /** a moderator's resolve sends each contact who was texted one closing text */
  resolveNotifiesContacts: boolean;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * An embedded secret: generated once and kept in DATA_DIR (`jwt-secret` so tokens survive
 * restarts, `contact-id-key` so contact ids stay the same).
 */
function embeddedSecret(
  dataDir: string,
  name = 'jwt-secret',
  variable = 'JWT_SECRET',
  ifBad = 'delete the file to have a new one generated',
): string {
  const file = join(dataDir, name);
  if (existsSync(file)) {
    const secret = readFileSync(file, 'utf8').trim();
    const why = secret.length < 32 ? 'is shorter than 32 characters' : secretWeakness(secret);
    if (why) throw new ConfigError(`${variable}: the secret kept in ${file} ${why}; ${ifBad}`);
    return secret;
  }
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('hex');
  writeFileSync(file, secret, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return secret;
}

/** The public keys in a comma-separated list of files, each read and checked now: a bad key stops start-up. */
function publicKeysIn(variable: string, files: string | undefined, parse: (text: string) => PublicKey[]): PublicKey[] {
  return (files ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean)
    .flatMap((file) => {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        throw new ConfigError(`${variable}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`, { cause: err });
      }
      try {
        return parse(text);
      } catch (err) {
        throw new ConfigError(`${variable}: ${file} ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
    });
}

/** The HS256 secret (if any) and every other key that verifies tokens. */
function tokenKeys(e: Env, cluster: boolean, dataDir: string): { secret?: string; keys: VerifyKey[] } {
  const publicKeys = [
    ...publicKeysIn('JWT_PUBLIC_KEY_FILE', e.JWT_PUBLIC_KEY_FILE, publicKeysFromPem),
    ...publicKeysIn('JWT_JWKS_FILE', e.JWT_JWKS_FILE, publicKeysFromJwks),
  ];
  if (cluster && !e.JWT_SECRET && publicKeys.length === 0)
    throw new ConfigError(
      'JWT_SECRET: required when REDIS_URL or MONGODB_URI is set (replicas must share it), unless JWT_PUBLIC_KEY_FILE or JWT_JWKS_FILE is set',
    );
  if (e.JWT_SECRET_PREVIOUS !== undefined) {
    if (!e.JWT_SECRET) throw new ConfigError('JWT_SECRET_PREVIOUS: set only with JWT_SECRET (the secret that replaces it)');
    if (e.JWT_SECRET_PREVIOUS === e.JWT_SECRET) throw new ConfigError('JWT_SECRET_PREVIOUS: must differ from JWT_SECRET');
  }
  // with public keys, HS256 is accepted only when a secret is set on purpose (a migration)
  const secret = e.JWT_SECRET ?? (publicKeys.length === 0 ? embeddedSecret(dataDir) : undefined);
  return { secret, keys: [...(e.JWT_SECRET_PREVIOUS ? [hs256Key(e.JWT_SECRET_PREVIOUS)] : []), ...publicKeys] };
}

/**
 * The contact id key: CONTACT_ID_KEY, required in cluster mode (replicas must derive the same
 * ids); embedded, generated once into DATA_DIR beside the database it keys. Never a constant.
 */
function contactIdKeys(e: Env, cluster: boolean, dataDir: string): { key: string; previous?: string } {
  if (cluster && !e.CONTACT_ID_KEY)
    throw new ConfigError(
      'CONTACT_ID_KEY: required when REDIS_URL or MONGODB_URI is set (replicas must share it); generate one with `openssl rand -hex 32`',
    );
  if (e.CONTACT_ID_KEY_PREVIOUS !== undefined) {
    if (!e.CONTACT_ID_KEY) throw new ConfigError('CONTACT_ID_KEY_PREVIOUS: set only with CONTACT_ID_KEY (the key that replaces it)');
    if (e.CONTACT_ID_KEY_PREVIOUS === e.CONTACT_ID_KEY) throw new ConfigError('CONTACT_ID_KEY_PREVIOUS: must differ from CONTACT_ID_KEY');
  }
  const key =
    e.CONTACT_ID_KEY ??
    embeddedSecret(
      dataDir,
      'contact-id-key',
      'CONTACT_ID_KEY',
      'replace it with the key the stored contact ids were derived with (docs/operating.md)',
    );
  return { key, ...(e.CONTACT_ID_KEY_PREVIOUS ? { previous: e.CONTACT_ID_KEY_PREVIOUS } : {}) };
}

/** `key=value,key2=value2` (values URL-encoded), as OTEL_EXPORTER_OTLP_HEADERS is written. */
function otlpHeaders(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (raw ?? '').split(',')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    const key = eq > 0 ? pair.slice(0, eq).trim() : '';
    if (key === '') throw new ConfigError('OTEL_EXPORTER_OTLP_HEADERS: must be key=value pairs separated by commas');
    try {
      out[key] = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      throw new ConfigError(`OTEL_EXPORTER_OTLP_HEADERS: the value of ${key} is not URL-encoded correctly`);
    }
  }
  return out;
}

const TRUST_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An IPv4 netmask with contiguous ones (255.255.0.0, not 255.0.255.0). */
function isNetmask(mask: string): boolean {
  if (isIP(mask) !== 4) return false;
  const bits = mask
    .split('.')
    .map((octet) => Number(octet).toString(2).padStart(8, '0'))
    .join('');
  return /^1*0*$/.test(bits);
}

/** One entry of a TRUST_PROXY list: a name Express knows, an address, or a subnet (CIDR or IPv4 netmask). */
function isTrustEntry(entry: string): boolean {
  if (TRUST_NAMES.has(entry)) return true;
  const [addr = '', mask, ...rest] = entry.split('/');
  const family = isIP(addr);
  if (family === 0 || rest.length > 0) return false;
  if (mask === undefined) return true;
  if (/^\d{1,3}$/.test(mask)) return Number(mask) <= (family === 4 ? 32 : 128);
  return family === 4 && isNetmask(mask);
}

/**
 * `true`/`false`, a hop count, or a comma-separated list of addresses, subnets and Express's
 * names (loopback, linklocal, uniquelocal). Every entry is checked here: Express would throw
 * on a bad one only when the app is built, with a message that does not name the variable.
 */
export function parseTrustProxy(raw: string): boolean | number | string[] {
  const v = raw.trim().toLowerCase();
  if (v === 'true') return true;
  if (v === 'false' || v === '') return false;
  if (/^\d+$/.test(v)) return Number(v);
  const list = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = list.find((s) => !isTrustEntry(s));
  if (bad !== undefined)
    throw new ConfigError(
      `TRUST_PROXY: "${bad}" is not an address, a subnet (10.0.0.0/8, fd00::/8) or one of loopback, linklocal, uniquelocal; the whole value may also be true, false or a hop count`,
    );
  return list;
}

function tracingConfig(e: Env, instanceId: string): TracingConfig {
  const endpointSet = e.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined || e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined;
  const exporter = e.OTEL_SDK_DISABLED === 'true' ? 'none' : (e.OTEL_TRACES_EXPORTER ?? (endpointSet ? 'otlp' : 'none'));
  if (exporter === 'none') return { exporter };
  const base = e.OTEL_EXPORTER_OTLP_ENDPOINT?.replace(/\/+$/, '');
  return {
    exporter,
    url: e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${base ?? 'http://localhost:4318'}/v1/traces`,
    headers: otlpHeaders(e.OTEL_EXPORTER_OTLP_HEADERS),
    timeoutMs: e.OTEL_EXPORTER_OTLP_TIMEOUT,
    serviceName: e.OTEL_SERVICE_NAME,
    instanceId,
  };
}

/** Socket.IO's share of HTTP_MAX_CONNECTIONS: what HTTP_RESERVED_CONNECTIONS (default a quarter) leaves. */
function socketsCap(e: Env): { maxConnections?: number } {
  if (e.HTTP_MAX_CONNECTIONS === 0) {
    if (e.HTTP_RESERVED_CONNECTIONS) throw new ConfigError('HTTP_RESERVED_CONNECTIONS: set only with a cap (HTTP_MAX_CONNECTIONS > 0)');
    return {};
  }
  const reserved = e.HTTP_RESERVED_CONNECTIONS ?? Math.ceil(e.HTTP_MAX_CONNECTIONS / 4);
  if (reserved >= e.HTTP_MAX_CONNECTIONS) throw new ConfigError('HTTP_RESERVED_CONNECTIONS: must be less than HTTP_MAX_CONNECTIONS');
  return { maxConnections: e.HTTP_MAX_CONNECTIONS - reserved };
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.TIMER_MAX_SECONDS < e.TIMER_MIN_SECONDS) throw new ConfigError('TIMER_MAX_SECONDS: must be >= TIMER_MIN_SECONDS');
  if (e.TIMER_MAX_TOTAL_SECONDS < e.TIMER_MAX_SECONDS) throw new ConfigError('TIMER_MAX_TOTAL_SECONDS: must be >= TIMER_MAX_SECONDS');
  const cluster = Boolean(e.REDIS_URL || e.MONGODB_URI);
  const twilioVars = [e.TWILIO_ACCOUNT_SID, e.TWILIO_AUTH_TOKEN, e.TWILIO_FROM];
  if (twilioVars.some(Boolean) && !twilioVars.every(Boolean))
    throw new ConfigError('TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN, TWILIO_FROM: set all three or none');
  // better-sqlite3 waits synchronously, so a busy wait also holds back the lease renewal
  // (every LOCK_TTL_MS / 3): the wait must end well before the lease could lapse
  if (e.SQLITE_BUSY_TIMEOUT_MS !== undefined && e.SQLITE_BUSY_TIMEOUT_MS > e.LOCK_TTL_MS / 2)
    throw new ConfigError('SQLITE_BUSY_TIMEOUT_MS: must be at most half of LOCK_TTL_MS');
  // a replica that arms a timer while another keeps the lease finds the lock held at its
  // deadline: the holder must look at the deadlines again before the shortest timer is due
  // a write waiting for its write concern must hear `wtimeout` from the server (and re-read) before its deadline
  if (e.MONGODB_OPERATION_TIMEOUT_MS <= e.MONGODB_WRITE_TIMEOUT_MS)
    throw new ConfigError('MONGODB_OPERATION_TIMEOUT_MS: must be greater than MONGODB_WRITE_TIMEOUT_MS');
  if (e.SWEEP_KEEP_LEASE_MS > e.TIMER_MIN_SECONDS * 1000)
    throw new ConfigError('SWEEP_KEEP_LEASE_MS: must be at most TIMER_MIN_SECONDS × 1000 (the shortest timer)');
  if (e.HTTP_REQUEST_TIMEOUT_MS < e.HTTP_HEADERS_TIMEOUT_MS)
    throw new ConfigError('HTTP_REQUEST_TIMEOUT_MS: must be >= HTTP_HEADERS_TIMEOUT_MS');
  if (e.METRICS_PORT !== undefined && e.METRICS_PORT !== 0 && e.METRICS_PORT === e.PORT)
    throw new ConfigError('METRICS_PORT: must differ from PORT (unset it to serve /metrics on PORT)');
  const dataDir = resolve(e.DATA_DIR);
  const tokens = tokenKeys(e, cluster, dataDir);
  const contactIds = contactIdKeys(e, cluster, dataDir);
  const replicaId = e.REPLICA_ID ?? `${hostname()}-${process.pid}`;
  return {
    mode: cluster ? 'cluster' : 'embedded',
    port: e.PORT,
    host: e.HOST,
    dataDir,
    sqliteFile: join(dataDir, 'vigil.db'),
    sqliteBusyTimeoutMs: e.SQLITE_BUSY_TIMEOUT_MS ?? Math.floor(e.LOCK_TTL_MS / 4),
    sqliteSynchronous: e.SQLITE_SYNCHRONOUS,
    mongodbUri: e.MONGODB_URI,
    mongodb: {
      dbName: e.MONGODB_DB,
      writeConcern: e.MONGODB_WRITE_CONCERN,
      writeTimeoutMs: e.MONGODB_WRITE_TIMEOUT_MS,
      serverSelectionTimeoutMs: e.MONGODB_SERVER_SELECTION_TIMEOUT_MS,
      operationTimeoutMs: e.MONGODB_OPERATION_TIMEOUT_MS,
    },
    redisUrl: e.REDIS_URL,
    jwtSecret: tokens.secret,
    contactIds,
    logLevel: e.LOG_LEVEL,
    replicaId,
    limits: {
      minSeconds: e.TIMER_MIN_SECONDS,
      maxSeconds: e.TIMER_MAX_SECONDS,
      maxExtensions: e.TIMER_MAX_EXTENSIONS,
      maxTotalSeconds: e.TIMER_MAX_TOTAL_SECONDS,
    },
    sweep: {
      cron: e.SWEEP_CRON,
      wakeUps: e.SWEEP_WAKE_UPS === 'on',
      // the holder looks again at the next deadline only through its wake-ups
      keepLeaseMs: e.SWEEP_WAKE_UPS === 'on' ? e.SWEEP_KEEP_LEASE_MS : 0,
      batchSize: e.SWEEP_BATCH_SIZE,
      shards: e.SWEEP_SHARDS,
      concurrency: e.SWEEP_CONCURRENCY,
      lockName: e.LOCK_NAME,
      lockTtlMs: e.LOCK_TTL_MS,
    },
    escalationMaxAttempts: e.ESCALATION_MAX_ATTEMPTS,
    warning: { beforeMs: e.WARNING_BEFORE_SECONDS * 1000, graceMs: e.GRACE_SECONDS * 1000 },
    retention: {
      days: e.RETENTION_DAYS,
      cron: e.RETENTION_CRON,
      batchSize: e.RETENTION_BATCH_SIZE,
      maxBatches: e.RETENTION_MAX_BATCHES,
      lockName: e.RETENTION_LOCK_NAME,
    },
    delivery: {
      maxAttempts: e.DELIVERY_MAX_ATTEMPTS,
      baseMs: e.DELIVERY_BACKOFF_BASE_MS,
      capMs: e.DELIVERY_BACKOFF_CAP_MS,
      leaseMs: e.DELIVERY_LEASE_MS,
      maxInFlight: e.DELIVERY_MAX_IN_FLIGHT ?? (cluster ? CLUSTER_MAX_IN_FLIGHT : EMBEDDED_MAX_IN_FLIGHT),
    },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    bodyLimit: e.BODY_LIMIT,
    sms: {
      primary: e.SMS_PRIMARY,
      twilio:
        e.TWILIO_ACCOUNT_SID && e.TWILIO_AUTH_TOKEN && e.TWILIO_FROM
          ? {
              accountSid: e.TWILIO_ACCOUNT_SID,
              authToken: e.TWILIO_AUTH_TOKEN,
              from: e.TWILIO_FROM,
              statusCallbackUrl: e.TWILIO_STATUS_CALLBACK_URL,
              inboundUrl: e.TWILIO_INBOUND_URL,
              baseUrl: e.TWILIO_BASE_URL,
              timeoutMs: e.TWILIO_TIMEOUT_MS,
              caBundleFile: e.TWILIO_CA_BUNDLE,
              httpProxy: e.HTTP_PROXY,
            }
          : undefined,
      fast2sms: e.FAST2SMS_API_KEY
        ? { apiKey: e.FAST2SMS_API_KEY, baseUrl: e.FAST2SMS_BASE_URL, timeoutMs: e.FAST2SMS_TIMEOUT_MS }
        : undefined,
      failover: { threshold: e.SMS_FAILOVER_THRESHOLD, openMs: e.SMS_FAILOVER_OPEN_MS },
      maxPerSecond: { twilio: e.TWILIO_MAX_PER_SECOND, fast2sms: e.FAST2SMS_MAX_PER_SECOND },
      maxPerIncident: e.SMS_MAX_PER_INCIDENT,
      maxPerUserPerDay: e.SMS_MAX_PER_USER_PER_DAY,
      resolveNotifiesContacts: e.RESOLVE_NOTIFY_CONTACTS !== 'false',
    },
    tracing: tracingConfig(e, replicaId),
    rateLimit: {
      windowMs: e.RATE_LIMIT_WINDOW_MS,
      perPerson: e.RATE_LIMIT_PER_PERSON,
      checkInsPerPerson: e.RATE_LIMIT_CHECKINS_PER_PERSON,
      perIp: e.RATE_LIMIT_PER_IP,
      holdMs: e.RATE_LIMIT_HOLD_MS,
      maxHeld: e.RATE_LIMIT_MAX_HELD,
      redisTimeoutMs: e.RATE_LIMIT_REDIS_TIMEOUT_MS,
    },
    trustProxy: parseTrustProxy(e.TRUST_PROXY),
    http: {
      maxConnections: e.HTTP_MAX_CONNECTIONS,
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    },
    sockets: {
      perUser: e.SOCKETS_PER_USER,
      ...socketsCap(e),
      authTimeoutMs: e.SOCKETS_AUTH_TIMEOUT_MS,
      maxMessageBytes: e.SOCKETS_MAX_MESSAGE_BYTES,
      recheckMs: e.SOCKET_TOKEN_RECHECK_MS,
    },
    revocationCacheMs: e.TOKEN_REVOCATION_CACHE_MS,
    tokens: { maxLifetimeSeconds: e.JWT_MAX_LIFETIME_SECONDS, issuer: e.JWT_ISSUER, audience: e.JWT_AUDIENCE, keys: tokens.keys },
    location: {
      flushMs: e.LOCATION_FLUSH_SECONDS * 1000,
      minIntervalMs: e.LOCATION_MIN_INTERVAL_SECONDS * 1000,
      perMinute: e.LOCATION_MAX_PER_MINUTE,
      followUpMeters: e.LOCATION_FOLLOWUP_METERS,
      cacheTtlMs: e.LOCATION_CACHE_TTL_SECONDS * 1000,
      sosIncludeMeeting: e.SOS_INCLUDE_MEETING === 'true',
    },
    metrics: { port: e.METRICS_PORT, token: e.METRICS_TOKEN, storeCacheMs: e.METRICS_STORE_CACHE_MS },
    paging: { unacknowledgedAfterSeconds: e.PAGE_UNACKNOWLEDGED_AFTER_SECONDS },
    duress: { textContacts: e.DURESS_TEXT_CONTACTS === 'true' },
  };
}
