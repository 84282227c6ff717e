/**
 * Cluster mode with real processes, store-agnostic: three replicas of the built
 * server (`node dist/main.js`) sharing one store (SQLite file or MongoDB database) and a
 * throwaway redis-server. These cases: 500 timers armed over REST across the replicas
 * (invariants 3 and 7 at scale, the lock keeping sweeps apart), and the Socket.IO fan-out
 * across replicas with the REST catch-up that covers what a socket may miss. Each is a
 * function that declares its `it` inside the caller's describe; the test files choose
 * the store (cluster.test.ts: SQLite, cluster-mongo.test.ts: MongoDB / FerretDB).
 */
import { expect, it } from 'vitest';
import { connect, type Recorder } from '../helpers/sockets.js';
import { eventually } from '../helpers/vigil.js';
import {
  aTickAfter,
  allSweeps,
  budget,
  byFence,
  eachLimit,
  FLOOR_MS,
  fenceOrderViolations,
  itWithConcurrentCas,
  linesWith,
  loggedWindow,
  overlaps,
  pollEvery,
  sized,
  smsPerKey,
  sweepsLogged,
  workWindows,
  type ScenarioRegistry,
} from './harness.js';

type Payload = Record<string, unknown>;
const timerOf = (p: Payload) => p.timer as { id: string; userId: string } | undefined;
const incidentOf = (p: Payload) => p.incident as { id: string; timerId: string; userId: string } | undefined;
const deliveryOf = (p: Payload) => p.delivery as { incidentId: string; key: string; status: string } | undefined;
const phone = (i: number, c: number) => `+1415${String(i).padStart(6, '0')}${c}`;

/** Distinct SOS incidents a recorder saw (a repaired escalation may publish the same eventId twice). */
const sosIncidents = (r: Recorder) => new Map(r.named('sos.triggered').map((p) => [String(p.eventId), incidentOf(p)!]));

/** Scenario 1: 500 people (100 on a scanning server) arm over REST on the three replicas, with a moderator socket and every owner's socket. */
export function roundRobin500(reg: ScenarioRegistry): void {
  // Several dispatchers (one per replica, and the sweep's own dispatch on each) lease
  // deliveries at the same time; a backend that cannot prove atomic leases can hand a
  // key to the carrier twice, so there only "at least once" is asserted.
  const b = reg.backend;
  const leaseCaveat = b.concurrentCasUnsupported;
  const N = sized(b, 500, 100);
  const title =
    `${N} timers armed round-robin escalate exactly once; every socket gets its own SOS; sweeps never overlap` +
    (N < 500 ? ` (${N}, not 500, on ${b.name}: ${b.scansCollections})` : '') +
    (leaseCaveat ? ` (on ${b.name} each SMS is asserted handed over at least once, not exactly once: ${leaseCaveat})` : '');
  it(title, { timeout: 300_000 }, async () => {
    // The lease is extended between batches, not within one: on a scanning server a batch
    // of 500 (the default) could outlast LOCK_TTL_MS, and the next holder's repair would
    // overlap it. Batches of 10 keep every batch well inside the lease there.
    const { cluster: c, store } = await reg.start(b.scansCollections ? { env: { SWEEP_BATCH_SIZE: '10' } } : {});
    const sockets: Recorder[] = [];
    try {
      const moderator = await connect(c.url(0), c.token('moderator', { admin: true }));
      sockets.push(moderator);
      const users = Array.from({ length: N }, (_, i) => ({ i, id: `owner-${i}`, token: c.token(`owner-${i}`, { name: `Owner ${i}` }) }));
      // every owner's socket, on replica 2 or 3 (never the one the moderator is on)
      const owners: Recorder[] = new Array<Recorder>(N);
      await eachLimit(users, 50, async (u) => {
        owners[u.i] = await connect(c.url(1 + (u.i % 2)), u.token);
        sockets.push(owners[u.i]!);
      });

      // contacts, then timers (due 3–5 s later), round-robin over the three replicas
      await eachLimit(users, 24, async (u) => {
        const contacts = Array.from({ length: 1 + (u.i % 2) }, (_, k) => ({ name: `Contact ${k}`, phone: phone(u.i, k) }));
        const put = await c.api(u.i % 3, u.token, 'PUT', '/v1/me/contacts', { contacts });
        expect(put.status).toBe(200);
      });
      const timerOwner = new Map<string, string>();
      const armedAt = Date.now();
      await eachLimit(users, 24, async (u) => {
        const arm = await c.api(
          u.i % 3,
          u.token,
          'POST',
          '/v1/timers',
          { durationSeconds: 3 + (u.i % 3) },
          { 'Idempotency-Key': `arm-${u.i}` },
        );
        expect(arm.status).toBe(201);
        timerOwner.set(arm.body.timer.id, u.id);
      });
      const armingMs = Date.now() - armedAt;

      const contacts = users.reduce((n, u) => n + 1 + (u.i % 2), 0);
      await eventually(
        async () => {
          const p = await store.progress();
          return p.done === N && p.pending === 0 && p.sent === contacts;
        },
        'every timer escalated and every SMS sent',
        budget(N, 120, 60_000),
        pollEvery(b, 250),
      );
      const final = await store.tally();
      await eventually(async () => sosIncidents(moderator).size === N, `the moderator's ${N} SOS events`, budget(N, 40, FLOOR_MS));
      await eventually(
        async () => owners.every((o) => o.named('sos.triggered').length > 0),
        'every owner got an SOS',
        budget(N, 40, FLOOR_MS),
      );
      // the logs trail the store (see sweepsLogged): wait for them before reading them
      await eventually(
        async () => smsPerKey(c).size === contacts && sweepsLogged(c),
        'every SMS and sweep line logged',
        budget(contacts, 10, FLOOR_MS),
      );
      await aTickAfter(c, Date.now()); // late duplicates or strays would have come by the next tick

      // the store: one incident per timer, one delivery per contact, all sent
      expect(final).toMatchObject({
        timers: N,
        expired: N,
        live: 0,
        done: N,
        pending: 0,
        incidents: N,
        incidentTimers: N,
        strayDeliveries: 0,
        fenceMismatches: 0,
      });
      expect(final.expectedDeliveries).toBe(contacts);
      expect(final.deliveries).toBe(contacts);
      expect(final.deliveryPairs).toBe(contacts);
      expect(final.sent).toBe(contacts);
      // the carrier: each delivery key handed over exactly once, across the replicas
      const perKey = smsPerKey(c);
      const twice = [...perKey.values()].filter((n) => n > 1).length;
      expect(perKey.size).toBe(contacts);
      if (!leaseCaveat) expect(twice).toBe(0);

      // the moderator on r1: every SOS once (by eventId), whichever replica escalated it
      const seen = sosIncidents(moderator);
      expect(seen.size).toBe(N);
      expect(new Set([...seen.values()].map((i) => i.timerId))).toEqual(new Set(timerOwner.keys()));
      const escalatedBy = new Map<string, string>();
      for (const l of linesWith(c, 'SOS escalated')) if (l.repaired === false) escalatedBy.set(String(l.incident), String(l.replica));
      const byReplica: Record<string, number> = {};
      for (const r of escalatedBy.values()) byReplica[r] = (byReplica[r] ?? 0) + 1;

      // each owner: their own SOS, and nothing that belongs to anyone else
      const perOwner: number[] = [];
      for (const u of users) {
        const rec = owners[u.i]!;
        const own = sosIncidents(rec);
        expect(own.size, `${u.id} SOS count`).toBe(1);
        const incident = [...own.values()][0]!;
        expect(incident.userId).toBe(u.id);
        expect(timerOwner.get(incident.timerId)).toBe(u.id);
        for (const e of rec.events) {
          if (e.name === 'ready') continue;
          const owner = timerOf(e.payload)?.userId ?? incidentOf(e.payload)?.userId;
          if (owner !== undefined) expect(owner, `${e.name} at ${u.id}`).toBe(u.id);
          const d = deliveryOf(e.payload);
          if (d) expect(d.incidentId, `delivery event at ${u.id}`).toBe(incident.id);
        }
        perOwner.push(rec.events.filter((e) => e.name !== 'ready').length);
      }

      // the lock: no two replicas sweep at the same time while Redis is up
      const sweeps = allSweeps(c);
      expect(sweeps.filter((s) => s.outcome === 'swept_without_lock' || s.outcome === 'failed')).toEqual([]);
      const swept = sweeps.filter((s) => s.outcome === 'swept');
      // a fence is one acquisition: the sweeps under it (a lease kept from one to the next) are one replica's
      const fenceHolders = new Map<number, Set<string>>();
      for (const s of swept) fenceHolders.set(s.fence, (fenceHolders.get(s.fence) ?? new Set()).add(s.replica));
      expect([...fenceHolders].filter(([, r]) => r.size > 1)).toEqual([]);
      const work = byFence(workWindows(c));
      const logged = overlaps(byFence(swept.map(loggedWindow)));
      const working = swept.filter((s) => s.claimed > 0 || s.repaired > 0);
      const ticks = new Map<number, Set<string>>();
      for (const s of swept)
        ticks.set(Math.floor(s.startedAt / 1000), (ticks.get(Math.floor(s.startedAt / 1000)) ?? new Set()).add(s.replica));
      console.log(
        `[cluster ${b.name}] ${N} timers armed over REST in ${armingMs} ms; escalated by ${JSON.stringify(byReplica)}; ` +
          `${twice} of ${contacts} SMS handed to the carrier more than once${leaseCaveat ? ' (not asserted here)' : ''}; ` +
          `moderator on r1 got ${seen.size} distinct sos.triggered (${moderator.named('sos.triggered').length} with repeats), ` +
          `${moderator.events.length - 1} events in all; owners got ${Math.min(...perOwner)}–${Math.max(...perOwner)} events each; ` +
          `${swept.length} swept sweeps, ${working.length} with work (${working.map((s) => `${s.replica}#${s.fence}:${s.claimed}`).join(' ')}); ` +
          `overlapping work windows: ${overlaps(work).length}; logged windows overlapping by the release round trip: ${logged.length} (max ${Math.max(0, ...logged.map((o) => o.ms))} ms); ` +
          `${[...ticks.values()].filter((s) => s.size > 1).length}/${ticks.size} ticks swept by more than one replica, one after the other`,
      );
      expect(overlaps(work)).toEqual([]);
      expect(fenceOrderViolations(work)).toEqual([]);
    } finally {
      for (const s of sockets) s.close();
    }
  });
}

/**
 * Only r2 ticks; its SOS reaches moderators on r1 and r3 and the owner on r3 through the
 * Socket.IO Redis adapter, and `since` re-reads catch up. It counts the delivery events: r2's
 * two dispatch paths (the tick after a sweep, and its own tick) lease at the same time, so it
 * relies on concurrent CAS.
 */
export function fanOut(reg: ScenarioRegistry): void {
  itWithConcurrentCas(
    reg,
    'fan-out: an SOS escalated by r2 reaches the moderators on r1 and r3 and the owner on r3; REST `since` catches up',
    { timeout: 60_000 },
    async () => {
      // Only r2 sweeps: r1 and r3 run their sweep and dispatch once a year and do not wake at deadlines
      // (API-only replicas: configuration, not a switch).
      const yearly = '0 0 0 1 1 *';
      const { cluster: c } = await reg.start({
        env: (i): Record<string, string> => (i === 1 ? {} : { SWEEP_CRON: yearly, SWEEP_WAKE_UPS: 'off' }),
      });
      const admin = c.token('moderator', { admin: true });
      const moderator = await connect(c.url(0), admin);
      const moderator3 = await connect(c.url(2), c.token('moderator-3', { admin: true }));
      const aliceTok = c.token('alice', { name: 'Alice' });
      const alice = await connect(c.url(2), aliceTok);
      try {
        const before = await c.api(0, admin, 'GET', '/v1/admin/incidents');
        expect(before.status).toBe(200);
        const cursor = String(before.body.cursor);

        await c.api(2, aliceTok, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Sam', phone: '+14155550111' }] });
        const bobTok = c.token('bob', { name: 'Bob' });
        await c.api(0, bobTok, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Kim', phone: '+14155550112' }] });
        const ta = (await c.api(2, aliceTok, 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer;
        const tb = (await c.api(0, bobTok, 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer;

        await eventually(async () => sosIncidents(moderator).size === 2, 'two SOS at the moderator on r1');
        await eventually(async () => sosIncidents(moderator3).size === 2, 'two SOS at the moderator on r3');
        await eventually(async () => alice.named('sos.triggered').length === 1, 'the SOS at alice on r3');
        await eventually(
          async () => moderator.named('delivery.updated').filter((p) => deliveryOf(p)?.status === 'sent').length === 2,
          'delivery events from r2 at the moderator on r1',
        );

        // r2 did the escalating; r1 and r3 only relayed what came over Redis
        const escalations = linesWith(c, 'SOS escalated');
        expect(new Set(escalations.map((l) => l.replica))).toEqual(new Set(['r2']));
        expect(new Set(escalations.map((l) => l.timer))).toEqual(new Set([ta.id, tb.id]));
        for (const m of [moderator, moderator3]) {
          expect(new Set([...sosIncidents(m).values()].map((i) => i.timerId))).toEqual(new Set([ta.id, tb.id]));
          // in batches (one emit per turn), never one by one
          expect(m.batches.flatMap((x) => x.events).filter((e) => e.name === 'sos.triggered').length).toBe(m.named('sos.triggered').length);
        }
        expect(alice.named('timer.expired').map((p) => timerOf(p)?.id)).toEqual([ta.id]);
        expect(alice.events.some((e) => JSON.stringify(e.payload).includes(tb.id))).toBe(false);

        // a client that missed events re-reads from its cursor on any replica
        const missed = await c.api(2, admin, 'GET', `/v1/admin/incidents?since=${encodeURIComponent(cursor)}`);
        expect(missed.status).toBe(200);
        const ids = (missed.body.incidents as { timerId: string; deliveries: { status: string }[] }[]).map((i) => i.timerId);
        expect(new Set(ids)).toEqual(new Set([ta.id, tb.id]));
        const mine = await c.api(1, aliceTok, 'GET', `/v1/timers?since=${encodeURIComponent(cursor)}`);
        expect((mine.body.timers as { id: string; status: string }[]).map((t) => [t.id, t.status])).toEqual([[ta.id, 'expired']]);
        console.log(
          `[fan-out ${reg.backend.name}] moderators on r1 and r3 got ${moderator.events.length - 1} and ${moderator3.events.length - 1} events ` +
            `escalated/sent by r2 (in ${moderator.batches.length} and ${moderator3.batches.length} batches); alice on r3 got ${alice.events.length - 1}`,
        );
      } finally {
        moderator.close();
        moderator3.close();
        alice.close();
      }
    },
  );
}
