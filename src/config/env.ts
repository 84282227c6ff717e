/**
 * Every environment variable Vigil reads: name, type, default and meaning, declared once.
 * `loadConfig` (src/config.ts) parses them; the reference in docs/configuration.md is
 * generated from these declarations (`npm run docs`), so a meaning is edited here, not there.
 */
import cron from 'node-cron';
import { z } from 'zod';
import { MAX_SWEEP_SHARDS } from '../domain/sweep-shard.js';
import { GENERATE_SECRET, secretWeakness } from './secret-strength.js';

/**
 * Default sends in flight: one process carries a burst's texts alone; replicas share the
 * carrier account's concurrency and, on one host, the cores: 3 replicas × 32 is one
 * process's 96. Measured: docs/sms.md, "Send rate".
 */
export const EMBEDDED_MAX_IN_FLIGHT = 96;
export const CLUSTER_MAX_IN_FLIGHT = 32;

/**
 * A variable's meaning, and what leaving it unset means when that is not a plain default
 * (computed from other settings, or a feature turned off). Read back by scripts/gen-docs.ts.
 */
export interface EnvDoc {
  description: string;
  unset?: string;
}

const doc = <T extends z.ZodType>(schema: T, description: string, unset?: string): T =>
  schema.meta(unset === undefined ? { description } : { description, unset });

const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);
const optStr = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));
const cron6 = (def: string) =>
  z
    .string()
    .default(def)
    .refine((v) => v.trim().split(/\s+/).length === 6 && cron.validate(v), 'must be a valid 6-field node-cron expression');
const flag = () => z.enum(['true', 'false', '']).default('false');
const hs256Secret = z
  .string()
  .min(32, 'must be at least 32 characters')
  .superRefine((v, ctx) => {
    const why = secretWeakness(v);
    if (why) ctx.addIssue({ code: 'custom', message: `${why}; ${GENERATE_SECRET}` });
  });

const processAndListener = {
  PORT: doc(int(3000).pipe(z.number().max(65535)), 'HTTP and Socket.IO port'),
  HOST: doc(z.string().default('0.0.0.0'), 'address the listener binds'),
  DATA_DIR: doc(z.string().default('./data'), 'the embedded SQLite file (`vigil.db`) and the generated JWT secret live here'),
  LOG_LEVEL: doc(
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    'pino level: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`',
  ),
  REPLICA_ID: doc(optStr, 'names this replica in logs, metrics (`replica`), traces and the lock token', '`<hostname>-<pid>`'),
  SHUTDOWN_TIMEOUT_MS: doc(int(25000, 0), 'hard limit on a graceful stop; a second signal exits at once'),
  METRICS_PORT: doc(
    optStr.pipe(z.coerce.number<string | undefined>().int().min(0).max(65535).optional()),
    'set → `GET /metrics` is served on a listener of its own on this port (same `HOST`) and no longer on `PORT`; keep it off the load balancer ([security.md](security.md#metrics-and-readiness))',
    '`/metrics` on `PORT`',
  ),
  METRICS_TOKEN: doc(
    optStr.pipe(z.string().min(32, 'must be at least 32 characters').optional()),
    'set → `GET /metrics` (on either listener) answers only `Authorization: Bearer <this>`, else 401',
    'no token asked',
  ),
  METRICS_STORE_CACHE_MS: doc(
    int(1000, 0),
    'the store-wide gauges are read from the store at most once per this long; scrapes in between get the last read; `0`: every scrape reads',
  ),
};

const modeAndStores = {
  MONGODB_URI: doc(optStr, 'set → the MongoDB store (cluster mode); see [mongodb.md](mongodb.md)', 'the embedded SQLite store'),
  REDIS_URL: doc(optStr, 'set → the Redis lock, Socket.IO fan-out over Redis and shared rate limits (cluster mode)', 'in-process lock'),
  MONGODB_DB: doc(optStr, 'MongoDB database', 'the database in the URI path, else `vigil`'),
  MONGODB_WRITE_CONCERN: doc(
    z
      .string()
      .default('majority')
      .refine((v) => v === 'majority' || /^[1-9]\d*$/.test(v), 'must be "majority" or a whole number >= 1')
      .transform((v): 'majority' | number => (v === 'majority' ? v : Number(v))),
    'write concern of every MongoDB write: `majority` or a number of members ≥ 1 (keep `majority` in production)',
  ),
  MONGODB_WRITE_TIMEOUT_MS: doc(int(5000, 1), '`wtimeout`: after this a write whose concern is unconfirmed counts as unknown'),
  MONGODB_SERVER_SELECTION_TIMEOUT_MS: doc(
    int(5000, 100),
    'start-up gives up on MongoDB after this (clear message, exit); each operation waits at most this long for a primary',
  ),
  MONGODB_OPERATION_TIMEOUT_MS: doc(
    int(10000, 100),
    'longest one MongoDB store operation may take (its round trips together) before it fails as 503 `store_unavailable`; more than `MONGODB_WRITE_TIMEOUT_MS`',
  ),
  SQLITE_BUSY_TIMEOUT_MS: doc(
    z.coerce.number().int().min(0).optional(),
    "how long a SQLite write waits for another process's lock before the request answers 503 `store_busy` with `Retry-After`; at most half of `LOCK_TTL_MS`",
    'a quarter of `LOCK_TTL_MS`',
  ),
  SQLITE_SYNCHRONOUS: doc(
    z.enum(['full', 'normal']).default('full'),
    '`full`: every commit is fsynced (an acknowledged write survives a power loss); `normal`: the WAL is fsynced at checkpoints only, faster, may lose the last commits on a power loss ([why](architecture.md#why-a-burst-stays-on-time))',
  ),
};

const timers = {
  TIMER_MIN_SECONDS: doc(int(60, 1), 'shortest timer and shortest extension'),
  TIMER_MAX_SECONDS: doc(int(86400, 1), 'longest timer and longest single extension (≥ `TIMER_MIN_SECONDS`)'),
  TIMER_MAX_EXTENSIONS: doc(int(10), 'how many times one timer may be extended'),
  TIMER_MAX_TOTAL_SECONDS: doc(int(172800, 1), 'longest span from start to deadline, extensions included (≥ `TIMER_MAX_SECONDS`)'),
  WARNING_BEFORE_SECONDS: doc(
    int(120),
    'nudge the person (`timer.warning` and the inbox) this long before a deadline; `0` turns warnings off',
  ),
  GRACE_SECONDS: doc(int(0), 'wait this long after a deadline before the SOS (delays every real SOS by as much)'),
};

const sweep = {
  SWEEP_CRON: doc(
    cron6('* * * * * *'),
    'node-cron tick (6 fields) of the sweep and the dispatcher: the heartbeat; a replica also wakes at the next deadline',
  ),
  SWEEP_WAKE_UPS: doc(
    z.enum(['on', 'off']).default('on'),
    '`on`: also sweep at the next deadline of a live timer; `off`: on the cron tick only (with a rare `SWEEP_CRON`: a replica that serves the API and does not sweep)',
  ),
  SWEEP_KEEP_LEASE_MS: doc(
    int(1000, 0),
    'with wake-ups on, the holder keeps the sweep lock after a sweep while the next deadline is at most this far away, instead of taking and releasing it at every deadline; `0`: take and release it every sweep; at most `TIMER_MIN_SECONDS` × 1000 ([cluster.md](cluster.md))',
  ),
  SWEEP_BATCH_SIZE: doc(
    int(100, 1),
    'timers claimed by one statement (one synchronous stretch on SQLite: keep it small); a sweep claims batch after batch until nothing is due',
  ),
  SWEEP_SHARDS: doc(
    int(1, 1).pipe(z.number().max(MAX_SWEEP_SHARDS, `must be at most ${MAX_SWEEP_SHARDS}`)),
    `sweep shards, each under its own lock (\`LOCK_NAME\`, \`LOCK_NAME:1\` …): up to this many replicas escalate at once, each its own timers; \`1\`: one sweeper at a time; at most ${MAX_SWEEP_SHARDS} ([cluster.md](cluster.md#sweep-shards-more-than-one-replica-escalating))`,
  ),
  SWEEP_CONCURRENCY: doc(
    int(16, 1),
    'groups of escalations (one store write each) in flight at once within a batch on MongoDB; 1 on SQLite',
  ),
  LOCK_NAME: doc(z.string().min(1).default('vigil:sweep'), 'key of the sweep lock'),
  LOCK_TTL_MS: doc(int(10000, 100), 'lease of the sweep lock, renewed every third of it while held'),
  ESCALATION_MAX_ATTEMPTS: doc(
    int(5, 1),
    'failed escalations of one timer before it is dead-lettered (`failed`: no longer retried; `GET /v1/admin/escalations/failed`)',
  ),
};

const deliveries = {
  DELIVERY_MAX_ATTEMPTS: doc(int(6, 1), 'attempts per text before it is `dead`'),
  DELIVERY_BACKOFF_BASE_MS: doc(int(2000, 1), 'full-jitter exponential backoff between attempts: the base'),
  DELIVERY_BACKOFF_CAP_MS: doc(int(300000, 1), 'full-jitter exponential backoff between attempts: the cap'),
  DELIVERY_LEASE_MS: doc(int(30000, 100), 'how long a dispatcher owns a text it is sending (keep it well above the carrier timeouts)'),
  DELIVERY_MAX_IN_FLIGHT: doc(
    z.coerce.number().int().min(1).optional(),
    "sends in flight at once per replica; keep replicas × this under the carrier account's concurrency limit ([sms.md](sms.md#send-rate))",
    `${EMBEDDED_MAX_IN_FLIGHT} embedded, ${CLUSTER_MAX_IN_FLIGHT} in cluster mode`,
  ),
};

const sms = {
  SMS_PRIMARY: doc(z.enum(['twilio', 'fast2sms']).default('twilio'), 'with both carriers configured: the primary'),
  TWILIO_ACCOUNT_SID: doc(optStr, 'Twilio account (`AC…`); set the SID, the token and the sender, or none', 'no Twilio'),
  TWILIO_AUTH_TOKEN: doc(optStr, 'Twilio API auth token; also the key that signs status callbacks', 'no Twilio'),
  TWILIO_FROM: doc(
    optStr,
    'the sender: an E.164 number, an alphanumeric sender id, or a Messaging Service SID (`MG…`, sent as `MessagingServiceSid`)',
    'no Twilio',
  ),
  TWILIO_STATUS_CALLBACK_URL: doc(
    optStr.pipe(z.url().optional()),
    'the **public** URL of `POST /v1/receipts/twilio` (signatures are computed over it); set → every text asks Twilio for receipts there',
    'no receipts',
  ),
  TWILIO_INBOUND_URL: doc(
    optStr.pipe(z.url().optional()),
    "the **public** URL of `POST /v1/replies/twilio`, set as the number's incoming-message webhook in Twilio (signatures are computed over it)",
    'replies refused',
  ),
  TWILIO_BASE_URL: doc(
    optStr.pipe(z.url().optional()),
    'replaces `https://*.twilio.com` (an egress proxy; the fake in tests)',
    "Twilio's own hosts",
  ),
  TWILIO_TIMEOUT_MS: doc(int(10000, 100), 'deadline of one Twilio request, connect to last byte'),
  TWILIO_MAX_PER_SECOND: doc(int(0, 0), 'sends started per second through Twilio, per replica; `0`: no limit ([sms.md](sms.md#send-rate))'),
  TWILIO_CA_BUNDLE: doc(
    optStr,
    "a PEM file of the CA certificates Twilio's TLS connections trust, as the twilio library reads it",
    "Node's CAs",
  ),
  HTTP_PROXY: doc(
    optStr,
    "set → Twilio requests take the twilio library's own HTTP path (axios), which sends through this proxy, instead of Vigil's faster transport",
    'no proxy',
  ),
  FAST2SMS_API_KEY: doc(optStr, 'Fast2SMS API key (Indian numbers only: `+91` and ten digits starting 6–9)', 'no Fast2SMS'),
  FAST2SMS_BASE_URL: doc(optStr.pipe(z.url().default('https://www.fast2sms.com')), 'Fast2SMS API origin'),
  FAST2SMS_TIMEOUT_MS: doc(int(10000, 100), 'deadline of one Fast2SMS request'),
  FAST2SMS_MAX_PER_SECOND: doc(int(0, 0), 'sends started per second through Fast2SMS, per replica; `0`: no limit'),
  SMS_FAILOVER_THRESHOLD: doc(int(3, 1), 'consecutive retryable failures of the primary that open its circuit (sends go to the secondary)'),
  SMS_FAILOVER_OPEN_MS: doc(int(30000, 100), 'how long the circuit stays open before one trial send through the primary'),
  SMS_MAX_PER_INCIDENT: doc(int(12, 1), 'texts per incident, SOS and all-clear together ([sms.md](sms.md))'),
  SMS_MAX_PER_USER_PER_DAY: doc(
    int(60, 1),
    'texts handed to a carrier per person per rolling 24 h before a `moved` follow-up is held back (an SOS and the texts that end it never are)',
  ),
  RESOLVE_NOTIFY_CONTACTS: doc(
    z.enum(['true', 'false', '']).default('true'),
    '`true`: when a moderator resolves an incident, each contact whose SOS went out (or may have) gets one closing text; `false`: none ("I\'m safe" afterwards still tells them)',
  ),
};

const location = {
  LOCATION_FLUSH_SECONDS: doc(int(60, 1), 'how often each replica stores the location fixes it received'),
  LOCATION_MIN_INTERVAL_SECONDS: doc(int(5, 0), 'at most one kept fix per person this often (else 429 `rate_limited`)'),
  LOCATION_MAX_PER_MINUTE: doc(
    int(12, 1),
    'location posts per person per minute, and `location.fix` messages per socket, counted before the store is read (made-up ids too; else 429 `rate_limited`)',
  ),
  LOCATION_FOLLOWUP_METERS: doc(
    int(500, 1),
    'after the SOS, one `moved` text to the contacts beyond this distance from where the SOS said',
  ),
  LOCATION_CACHE_TTL_SECONDS: doc(int(7200, 1), 'time to live of the latest fix in Redis (cluster) or memory'),
  SOS_INCLUDE_MEETING: doc(flag(), '`true`: the SOS text says whom the person was meeting'),
};

const retention = {
  RETENTION_DAYS: doc(int(30, 0), 'closed records older than this are anonymised ([privacy.md](privacy.md)); `0` keeps everything'),
  RETENTION_CRON: doc(cron6('0 17 3 * * *'), 'when the retention job runs (6 fields)'),
  RETENTION_BATCH_SIZE: doc(int(500, 1), 'records of each kind per retention batch'),
  RETENTION_MAX_BATCHES: doc(int(20, 1), 'batches per retention run; the rest waits for the next run'),
  RETENTION_LOCK_NAME: doc(z.string().min(1).default('vigil:retention'), 'the lock one replica holds while it runs the retention job'),
};

const contactIds = {
  CONTACT_ID_KEY: doc(
    optStr.pipe(hs256Secret.optional()),
    'HMAC key of contact ids (a contact id is a keyed hash of the person and the number, kept after the number is anonymised): at least 32 characters, random, shared by every replica (`openssl rand -hex 32`); changing it re-keys the stored ids at start-up ([security.md](security.md#contact-ids))',
    'generated into `DATA_DIR/contact-id-key` when embedded; **required** in cluster mode',
  ),
  CONTACT_ID_KEY_PREVIOUS: doc(
    optStr.pipe(hs256Secret.optional()),
    'during a rotation of `CONTACT_ID_KEY`: the key before it; stored ids derived with it are re-keyed at start-up ([operating.md](operating.md#rotating-contact_id_key))',
    'only ids derived with `CONTACT_ID_KEY` (or the plain hash of earlier versions) are accepted',
  ),
};

const requests = {
  JWT_SECRET: doc(
    optStr.pipe(hs256Secret.optional()),
    'HS256 key of the bearer tokens: at least 32 characters, random (placeholders and low-entropy values are refused; `openssl rand -hex 32`)',
    'generated into `DATA_DIR/jwt-secret` when embedded and no public key is set; **required** in cluster mode unless a public key is set',
  ),
  JWT_SECRET_PREVIOUS: doc(
    optStr.pipe(hs256Secret.optional()),
    'during a rotation of `JWT_SECRET`: the secret before it, also accepted until the tokens it signed have expired ([security.md](security.md#key-rotation))',
    'only `JWT_SECRET`',
  ),
  JWT_PUBLIC_KEY_FILE: doc(
    optStr,
    'PEM file(s), comma-separated, of the public keys whose tokens are accepted: RSA ≥ 2048 bits (RS256) or EC P-256 (ES256); replicas then hold no signing key ([security.md](security.md#tokens-srcauthtokensts))',
    'no RS256/ES256 tokens',
  ),
  JWT_JWKS_FILE: doc(
    optStr,
    'a local JWKS file (`{"keys": [...]}`, read at start-up, never fetched) of RS256/ES256 public keys, picked by the token\'s `kid`',
    'no RS256/ES256 tokens',
  ),
  JWT_MAX_LIFETIME_SECONDS: doc(int(2592000, 1), 'longest accepted token (`exp` − `iat`, or `exp` − now); `exp` is required'),
  JWT_ISSUER: doc(optStr, 'set → tokens must carry this `iss`', 'any issuer'),
  JWT_AUDIENCE: doc(optStr, 'set → tokens must carry this `aud`', 'any audience'),
  BODY_LIMIT: doc(z.string().default('16kb'), 'largest accepted request body (else 413 `body_too_large`)'),
  RATE_LIMIT_WINDOW_MS: doc(
    int(10000, 100),
    'window of every request budget ([security.md](security.md#request-budgets-srchttprate-limitts))',
  ),
  RATE_LIMIT_PER_PERSON: doc(int(100, 1), 'requests per person (token `sub`) per window, check-ins not included'),
  RATE_LIMIT_CHECKINS_PER_PERSON: doc(int(20, 1), 'safe, cancel and extend per person per window: a budget of their own'),
  RATE_LIMIT_PER_IP: doc(int(200, 1), 'requests without a valid token per client address per window (health and metrics not counted)'),
  RATE_LIMIT_HOLD_MS: doc(
    int(1000).pipe(z.number().max(5000, 'must be at most 5000')),
    'a refusal is held ½–1½ × this long before it is answered; `0`: at once; at most 5000',
  ),
  RATE_LIMIT_MAX_HELD: doc(int(1000), 'refusals held at once at most; beyond it they are answered at once'),
  RATE_LIMIT_REDIS_TIMEOUT_MS: doc(
    int(250, 1),
    'cluster mode: a Redis rate-limit call slower than this counts as Redis down (check-ins pass, the other budgets count on the replica)',
  ),
  TRUST_PROXY: doc(
    z.string().default('loopback'),
    'which hops may set `X-Forwarded-For` (Express `trust proxy`; the per-address budget keys on the result): `loopback`, addresses and subnets (`10.0.0.0/8`), a hop count, `false` or `true`; the value for each deployment shape: [security.md](security.md#client-address-trust_proxy)',
  ),
  HTTP_MAX_CONNECTIONS: doc(int(4096), 'open connections per replica; past it new ones are closed at once; `0`: no cap'),
  HTTP_HEADERS_TIMEOUT_MS: doc(int(10000, 1), 'the request headers must arrive within this (else 408 `request_timeout`)'),
  HTTP_REQUEST_TIMEOUT_MS: doc(int(15000, 1), 'the whole request, body included, must arrive within this (≥ `HTTP_HEADERS_TIMEOUT_MS`)'),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: doc(int(5000, 1), 'an idle keep-alive connection is closed after this'),
  HTTP_RESERVED_CONNECTIONS: doc(
    z.coerce.number().int().min(0).optional(),
    'connections of `HTTP_MAX_CONNECTIONS` that Socket.IO may never hold: a handshake is refused (503 `sockets_full`) once the sockets of the replica hold the rest, so plain HTTP (check-ins) always finds a slot; less than `HTTP_MAX_CONNECTIONS`',
    'a quarter of `HTTP_MAX_CONNECTIONS`',
  ),
  SOCKETS_PER_USER: doc(int(10, 1), 'Socket.IO connections one person may hold on one replica'),
  SOCKETS_AUTH_TIMEOUT_MS: doc(
    int(5000, 100),
    'a Socket.IO connection that has not authenticated (connected with a valid token) within this is closed; a failed token check closes it at once',
  ),
  SOCKETS_MAX_MESSAGE_BYTES: doc(
    int(8192, 1024),
    'largest Socket.IO message (a WebSocket frame, a long-polling body); a larger one closes the connection. The largest the protocol needs, a `location.fix` or the token of the handshake, is under 2 kB',
  ),
  SOCKET_TOKEN_RECHECK_MS: doc(
    int(30000, 1000),
    'how often each replica re-checks its open sockets: a socket whose token expired, or was revoked, is cut off ([security.md](security.md#revocation))',
  ),
  TOKEN_REVOCATION_CACHE_MS: doc(
    int(5000),
    "how long a replica trusts a person's token revocation stamp it read before reading it again: a revocation reaches the other replicas' REST checks within this; `0`: every request reads the store ([security.md](security.md#revocation))",
  ),
};

const tracing = {
  OTEL_SDK_DISABLED: doc(flag(), '`true` turns tracing off whatever else is set'),
  OTEL_TRACES_EXPORTER: doc(
    optStr.pipe(z.enum(['otlp', 'none']).optional()),
    '`otlp` (to `http://localhost:4318` unless an endpoint is set) or `none`',
    '`otlp` when an endpoint is set, else `none`',
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: doc(
    optStr.pipe(z.url().optional()),
    'set → traces over OTLP/HTTP to `<endpoint>/v1/traces` ([operating.md](operating.md#tracing))',
    'tracing off',
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: doc(
    optStr.pipe(z.url().optional()),
    'set → traces over OTLP/HTTP to exactly this URL',
    'tracing off',
  ),
  OTEL_EXPORTER_OTLP_HEADERS: doc(optStr, '`key=value,…` (values URL-encoded) sent to the collector', 'none'),
  OTEL_EXPORTER_OTLP_TIMEOUT: doc(int(10000, 1), 'export timeout (ms)'),
  OTEL_SERVICE_NAME: doc(
    optStr.pipe(z.string().default('vigil')),
    '`service.name` of every span (`service.instance.id` is the replica id)',
  ),
};

const paging = {
  PAGE_UNACKNOWLEDGED_AFTER_SECONDS: doc(
    int(60, 1),
    'an open incident no moderator has acknowledged for this long pages the on-call (alert `VigilIncidentUnacknowledged`, exported as `vigil_incident_unacknowledged_page_after_seconds`) and makes the console cue escalate ([runbooks.md](runbooks.md#vigilincidentunacknowledged))',
  ),
  DURESS_TEXT_CONTACTS: doc(
    z.enum(['true', 'false']).default('true'),
    '`true`: a check-in or cancel sent with the duress PIN texts the contacts (the SOS text, as for any SOS) besides paging the moderators; `false`: moderators only ([security.md](security.md#duress-code))',
  ),
};

/** The variables by topic, in the order the reference lists them. */
export const ENV_GROUPS = [
  ['Process and listener', processAndListener],
  ['Mode and stores', modeAndStores],
  ['Timers', timers],
  ['Sweep and escalation', sweep],
  ['Deliveries', deliveries],
  ['SMS carriers and caps', sms],
  ['Live location', location],
  ['Retention', retention],
  ['Paging and duress', paging],
  ['Contact ids', contactIds],
  ['Requests, connections and tokens', requests],
  ['Tracing', tracing],
] as const;

export const EnvSchema = z.object({
  ...processAndListener,
  ...modeAndStores,
  ...timers,
  ...sweep,
  ...deliveries,
  ...sms,
  ...location,
  ...retention,
  ...paging,
  ...contactIds,
  ...requests,
  ...tracing,
});

export type Env = z.infer<typeof EnvSchema>;
