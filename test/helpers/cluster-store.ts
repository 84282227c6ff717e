/**
 * The cluster tests' verdicts, whatever store the replicas share: seeding due timers
 * straight into the store, and the read-only counts that decide "exactly once". Reading
 * the store directly, rather than through a replica, keeps the verdict independent of
 * the code under test.
 *
 *  - SQLite: the shared file in the scenario's DATA_DIR (./cluster-data.ts).
 *  - MongoDB: a fresh database per scenario, read and written with the `mongodb` driver
 *    that mongoose ships (`mongoose.mongo`), never through the adapter. The target is
 *    $MONGODB_URI when set, else a throwaway FerretDB v1 (./ferretdb.ts); which server
 *    answers is read from `buildInfo`, never from configuration.
 */
import { randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { sweepSlot } from '../../src/domain/sweep-shard.js';
import type { ContactsDoc, DeliveryDoc, IncidentDoc, TimerDoc } from '../../src/store/mongo/schemas.js';
import { query, seedTimers, tally, writeLockFree, type SeedOptions, type Tally } from './cluster-data.js';
import { FERRET_MISSING, ferretAvailable, startFerretDb } from './ferretdb.js';

export type { SeedOptions, Tally };

export interface FenceCount {
  /** null: timers no sweep has expired */
  fence: number | null;
  n: number;
}

/** The cheap counts a test polls while it waits (a full tally reads every record). */
export interface Progress {
  incidents: number;
  /** expired timers whose escalation is done */
  done: number;
  /** timers whose escalation is pending */
  pending: number;
  /** SOS deliveries sent */
  sent: number;
}

/** One scenario's store, as the tests see it. */
export interface ClusterStore {
  /** environment that points every replica at this store (none for SQLite: DATA_DIR is enough) */
  readonly env: Record<string, string>;
  /** Insert `count` live timers, one user each, with their contacts (the replicas must be running: they create the schema). */
  seedTimers(o: SeedOptions): Promise<{ timerIds: string[]; contacts: number }>;
  progress(): Promise<Progress>;
  tally(): Promise<Tally>;
  /** incidents opened under a fence above `fence` */
  incidentsAboveFence(fence: number): Promise<number>;
  /** timers expired under `fence` whose escalation is not done */
  unfinishedOfFence(fence: number): Promise<number>;
  /** timers by the fence that expired them, incidents by the fence that opened them, ascending */
  fences(): Promise<{ timers: FenceCount[]; incidents: FenceCount[] }>;
  /** incidents created within [from, to] (ms since the epoch) */
  incidentsCreatedBetween(from: number, to: number): Promise<number>;
  /**
   * Whether a replica paused now (SIGSTOP) would leave the other replicas able to write
   * within `waitMs`. SQLite: false while some process holds the shared file's write
   * lock. MongoDB: always true (the server owns its locks, not the client).
   */
  writersFree(waitMs: number): Promise<boolean>;
  /** close connections and drop the scenario's data (the database on a MongoDB server). Safe to call twice. */
  close(): Promise<void>;
}

/** Where scenarios keep their state. */
export interface StoreBackend {
  /** `sqlite`, `mongodb` or `ferretdb` (the server that answered `buildInfo`) */
  readonly name: string;
  /**
   * Set when the backend cannot prove what concurrent compare-and-swap writers rely on
   * (two sweepers claiming at once, several dispatchers leasing at once): the reason.
   */
  readonly concurrentCasUnsupported?: string;
  /**
   * Set when the server answers every query but a look-up by `_id` by reading the whole
   * collection (FerretDB v1): the reason. Escalating N timers then costs O(N²), so
   * scenarios run at a size such a server sweeps in the test's time (each names both sizes).
   */
  readonly scansCollections?: string;
  /** how often a test may poll progress() without loading the server noticeably (ms) */
  readonly minPollMs: number;
  /** a fresh store for one scenario whose DATA_DIR is `dataDir` */
  open(dataDir: string): Promise<ClusterStore>;
}

// ── SQLite ────────────────────────────────────────────────────────────────────

export const sqliteBackend: StoreBackend = {
  name: 'sqlite',
  minPollMs: 0,
  async open(dataDir) {
    const count = (sql: string, ...params: unknown[]) => query<{ n: number }>(dataDir, sql, ...params)[0]?.n ?? 0;
    return {
      env: {},
      seedTimers: async (o) => seedTimers(dataDir, o),
      progress: async () => tally(dataDir),
      tally: async () => tally(dataDir),
      incidentsAboveFence: async (fence) => count('SELECT COUNT(*) AS n FROM incidents WHERE fence > ?', fence),
      unfinishedOfFence: async (fence) =>
        count("SELECT COUNT(*) AS n FROM timers WHERE expired_by_fence = ? AND escalation <> 'done'", fence),
      fences: async () => ({
        timers: query<FenceCount>(
          dataDir,
          'SELECT expired_by_fence AS fence, COUNT(*) AS n FROM timers GROUP BY expired_by_fence ORDER BY fence',
        ),
        incidents: query<FenceCount>(dataDir, 'SELECT fence, COUNT(*) AS n FROM incidents GROUP BY fence ORDER BY fence'),
      }),
      incidentsCreatedBetween: async (from, to) => count('SELECT COUNT(*) AS n FROM incidents WHERE created_at BETWEEN ? AND ?', from, to),
      writersFree: async (waitMs) => writeLockFree(dataDir, waitMs),
      close: async () => undefined,
    };
  },
};

// ── MongoDB ───────────────────────────────────────────────────────────────────

const { MongoClient } = mongoose.mongo;
type Db = mongoose.mongo.Db;

/** The fields these verdicts read, typed from the adapter's documents (src/store/mongo/schemas.ts; types only, no code). */
type TimerRow = Pick<TimerDoc, '_id' | 'userId' | 'status' | 'escalation' | 'expiredByFence' | 'updatedAt'>;
type IncidentRow = Pick<IncidentDoc, '_id' | 'timerId' | 'userId' | 'fence' | 'createdAt'>;
type DeliveryRow = Pick<DeliveryDoc, '_id' | 'incidentId' | 'userId' | 'contactId' | 'kind' | 'status'>;
type ContactsRow = Pick<ContactsDoc, '_id' | 'contacts'>;

const FERRET_CONCURRENT_CAS =
  'FerretDB v1 runs findAndModify and updateMany as a read followed by a write, so two replicas claiming the same timers or leasing the same deliveries at once can both win; needs a real MongoDB: set MONGODB_URI to run it';
const FERRET_SCANS =
  'FerretDB v1 (SQLite backend) uses no secondary index: every query but an _id look-up reads and decodes the whole collection, about 0.1 ms a document here';

export interface MongoTarget {
  readonly backend: StoreBackend;
  /** what answered: `mongodb://…` of $MONGODB_URI, or "a FerretDB per scenario" */
  readonly where: string;
}

/**
 * The MongoDB server of a test file: $MONGODB_URI when set (each scenario a fresh
 * database on it, dropped afterwards), else a throwaway FerretDB per scenario (its data
 * under `ferretRoot`, gone with it). What the server is comes from `buildInfo` — for
 * FerretDB, of one started and stopped here — and decides what the backend cannot
 * prove. Answers the reason instead when neither can run (on CI a missing FerretDB
 * throws instead).
 */
export async function mongoTarget(o: { ferretRoot?: string } = {}): Promise<MongoTarget | { unavailable: string }> {
  const given = process.env.MONGODB_URI;
  if (given) {
    const backend = backendFor(await serverKind(given), async () => ({ uri: given, shared: true, stop: async () => undefined }));
    return { backend, where: redact(given) };
  }
  if (!ferretAvailable()) return { unavailable: `${FERRET_MISSING}, and MONGODB_URI is not set` };
  const server = async () => {
    const f = await startFerretDb({ root: o.ferretRoot });
    return { uri: f.uri, shared: false, stop: () => f.stop() };
  };
  const probe = await server();
  let kind: ServerKind;
  try {
    kind = await serverKind(probe.uri);
  } finally {
    await probe.stop();
  }
  return { backend: backendFor(kind, server), where: 'a FerretDB per scenario' };
}

type ServerKind = 'mongodb' | 'ferretdb';

interface Server {
  uri: string;
  /** other scenarios (or people) use it too: drop the scenario's database afterwards */
  shared: boolean;
  stop(): Promise<void>;
}

function backendFor(kind: ServerKind, server: () => Promise<Server>): StoreBackend {
  const ferret = kind === 'ferretdb';
  return {
    name: kind,
    ...(ferret ? { concurrentCasUnsupported: FERRET_CONCURRENT_CAS, scansCollections: FERRET_SCANS } : {}),
    minPollMs: ferret ? 1000 : 100,
    async open() {
      const s = await server();
      try {
        // A server of its own is thrown away whole. On a shared one the database is dropped,
        // except on FerretDB v1: dropping a database while requests of the stopped replicas
        // are still being served there crashed it (SIGBUS in SQLite's WAL index), so it stays.
        return await openMongo(s.uri, { drop: s.shared && !ferret, stop: () => s.stop() });
      } catch (err) {
        await s.stop();
        throw err;
      }
    },
  };
}

/** FerretDB answers `buildInfo` with a `ferretdbVersion` field, as the adapter's serverKind() reads it. */
async function serverKind(uri: string): Promise<ServerKind> {
  const client = await new MongoClient(uri, { serverSelectionTimeoutMS: 5000 }).connect();
  try {
    const info = await client.db('admin').command({ buildInfo: 1 });
    return 'ferretdbVersion' in info ? 'ferretdb' : 'mongodb';
  } finally {
    await client.close();
  }
}

/** The URI without credentials, for titles and logs. */
const redact = (uri: string) => uri.replace(/\/\/[^@/]*@/, '//');

async function openMongo(uri: string, o: { drop: boolean; stop: () => Promise<void> }): Promise<ClusterStore> {
  const dbName = `vigil_cluster_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  // socketTimeoutMS: a query the server does not answer fails (a poll retries it, then reports)
  // instead of hanging the case: FerretDB v1 stopped answering everyone when an update command
  // of ~100 statements took its whole pool (docs/mongodb.md, "Batches of updates")
  const client = await new MongoClient(uri, {
    serverSelectionTimeoutMS: 5000,
    socketTimeoutMS: 15_000,
    appName: 'vigil-cluster-tests',
  }).connect();
  const db = client.db(dbName);
  let closing: Promise<void> | undefined;
  const count = (collection: string, filter: mongoose.mongo.Filter<mongoose.mongo.Document>) =>
    db.collection(collection).countDocuments(filter);
  return {
    env: { MONGODB_URI: uri, MONGODB_DB: dbName },
    seedTimers: (o) => seedMongo(db, o),
    async progress() {
      const [incidents, done, pending, sent] = await Promise.all([
        count('incidents', {}),
        count('timers', { status: 'expired', escalation: 'done' }),
        count('timers', { escalation: 'pending' }),
        count('deliveries', { kind: 'sos', status: 'sent' }),
      ]);
      return { incidents, done, pending, sent };
    },
    tally: () => tallyMongo(db),
    incidentsAboveFence: (fence) => count('incidents', { fence: { $gt: fence } }),
    unfinishedOfFence: (fence) => count('timers', { expiredByFence: fence, escalation: { $ne: 'done' } }),
    async fences() {
      const [timers, incidents] = await Promise.all([
        db
          .collection<TimerRow>('timers')
          .find({}, { projection: { expiredByFence: 1 } })
          .toArray(),
        db
          .collection<IncidentRow>('incidents')
          .find({}, { projection: { fence: 1 } })
          .toArray(),
      ]);
      return { timers: byFence(timers.map((t) => t.expiredByFence ?? null)), incidents: byFence(incidents.map((i) => i.fence)) };
    },
    incidentsCreatedBetween: (from, to) => count('incidents', { createdAt: { $gte: new Date(from), $lte: new Date(to) } }),
    writersFree: async () => true,
    close() {
      closing ??= (async () => {
        try {
          if (o.drop) await db.dropDatabase();
        } finally {
          await client.close();
          await o.stop();
        }
      })();
      return closing;
    },
  };
}

/** Counts per fence, ascending; timers never expired (no fence) count under null, first, as SQLite's GROUP BY does. */
function byFence(fences: (number | null)[]): FenceCount[] {
  const counts = new Map<number | null, number>();
  for (const f of fences) counts.set(f, (counts.get(f) ?? 0) + 1);
  return [...counts.entries()].sort(([a], [b]) => (a ?? -Infinity) - (b ?? -Infinity)).map(([fence, n]) => ({ fence, n }));
}

/**
 * The documents the adapter would write when arming (schemas.ts): live timers carry
 * `liveUser` (the unique "one live timer per person" index) and escalation `none`; each
 * person's contacts are one document keyed by the user id. Inserted in large unordered
 * batches, contacts first, so the timers come due together.
 */
async function seedMongo(db: Db, o: SeedOptions): Promise<{ timerIds: string[]; contacts: number }> {
  const prefix = o.prefix ?? 'seed-';
  const now = new Date();
  const timers: TimerDoc[] = [];
  const contactDocs: ContactsDoc[] = [];
  let contacts = 0;
  for (let i = 0; i < o.count; i++) {
    const userId = `${prefix}${i}`;
    const expiresAt = typeof o.expiresAt === 'function' ? o.expiresAt(i) : o.expiresAt;
    const n = o.contacts ? o.contacts(i) : 1 + (i % 2);
    contactDocs.push({
      _id: userId,
      contacts: Array.from({ length: n }, (_, c) => ({
        id: `c_${prefix}${i}_${c}`,
        name: `Contact ${c}`,
        phone: `+1415${String(i).padStart(6, '0')}${c}`,
      })),
      updatedAt: now,
    });
    contacts += n;
    timers.push({
      _id: `tmr_${prefix}${i}`,
      userId,
      status: 'active',
      startedAt: new Date(Math.min(now.getTime(), expiresAt - 1000)),
      expiresAt: new Date(expiresAt),
      updatedAt: now,
      displayName: `Person ${i}`,
      extensions: 0,
      escalation: 'none',
      liveUser: userId,
      slot: sweepSlot(`tmr_${prefix}${i}`),
    });
  }
  if (contactDocs.length > 0) await db.collection<ContactsDoc>('contacts').insertMany(contactDocs, { ordered: false });
  if (timers.length > 0) await db.collection<TimerDoc>('timers').insertMany(timers, { ordered: false });
  return { timerIds: timers.map((t) => t._id), contacts };
}

/**
 * The same counts as the SQLite tally, computed here from the documents (FerretDB v1
 * has no $lookup): every record is read once, with only the fields a verdict needs.
 */
async function tallyMongo(db: Db): Promise<Tally> {
  const [timers, incidents, deliveries, people] = await Promise.all([
    db
      .collection<TimerRow>('timers')
      .find({}, { projection: { userId: 1, status: 1, escalation: 1, expiredByFence: 1, updatedAt: 1 } })
      .toArray(),
    db
      .collection<IncidentRow>('incidents')
      .find({}, { projection: { timerId: 1, userId: 1, fence: 1, createdAt: 1 } })
      .toArray(),
    db
      .collection<DeliveryRow>('deliveries')
      .find({}, { projection: { incidentId: 1, userId: 1, contactId: 1, kind: 1, status: 1 } })
      .toArray(),
    db
      .collection<ContactsRow>('contacts')
      .find({}, { projection: { contacts: 1 } })
      .toArray(),
  ]);
  const contactsOf = new Map(people.map((p) => [p._id, new Set(p.contacts.map((c) => c.id))]));
  const timerById = new Map(timers.map((t) => [t._id, t]));
  const incidentById = new Map(incidents.map((i) => [i._id, i]));
  const expired = timers.filter((t) => t.status === 'expired');
  const done = expired.filter((t) => t.escalation === 'done');
  const sos = deliveries.filter((d) => d.kind === 'sos');
  return {
    timers: timers.length,
    live: timers.filter((t) => t.status === 'active' || t.status === 'extended').length,
    expired: expired.length,
    pending: timers.filter((t) => t.escalation === 'pending').length,
    done: done.length,
    incidents: incidents.length,
    incidentTimers: new Set(incidents.map((i) => i.timerId)).size,
    expectedDeliveries: expired.reduce((n, t) => n + (contactsOf.get(t.userId)?.size ?? 0), 0),
    deliveries: sos.length,
    deliveryPairs: new Set(sos.map((d) => JSON.stringify([d.incidentId, d.contactId]))).size,
    sent: sos.filter((d) => d.status === 'sent').length,
    // stricter than the SQLite join: a delivery whose incident is missing counts as stray too
    strayDeliveries: deliveries.filter((d) => {
      const i = incidentById.get(d.incidentId);
      return !i || d.userId !== i.userId || !contactsOf.get(i.userId)?.has(d.contactId);
    }).length,
    fenceMismatches: incidents.filter((i) => {
      const t = timerById.get(i.timerId);
      return t !== undefined && i.fence !== t.expiredByFence;
    }).length,
    lastIncidentAt: Math.max(0, ...incidents.map((i) => i.createdAt.getTime())),
    lastEscalatedAt: Math.max(0, ...done.map((t) => t.updatedAt.getTime())),
  };
}
