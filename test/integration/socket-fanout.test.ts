/**
 * Socket.IO across replicas through `@socket.io/redis-adapter` on a real throwaway Redis
 * (src/realtime/redis-adapter.ts, src/realtime/publisher.ts): events reach the owner's and
 * the moderators' sockets on every replica, once each, the publishing replica's included; a
 * burst reaches moderators as one batch per sweep group (the Redis publishes counted); a
 * person cut off on one replica's command is cut off on all; a replica hears a person's room
 * only while it holds one of their sockets, listens before the client is told it is
 * connected, and publishes nothing for a room nobody else listens to; stopping one replica
 * does not drop the sockets of the others; a Redis that stops answering holds nothing back
 * and queues only so much; after a Redis restart events cross again. Three in-process replicas, each on its own data dir (events do
 * not go through the store).
 */
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { createClient } from 'redis';
import { Server } from 'socket.io';
import { Adapter } from 'socket.io-adapter';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMetrics } from '../../src/metrics.js';
import { createPublisher } from '../../src/realtime/publisher.js';
import { connectRedisAdapter } from '../../src/realtime/redis-adapter.js';
import type { Replicas } from '../../src/realtime/replicas.js';
import { createRealtime } from '../../src/realtime/server.js';
import { signToken } from '../../src/auth/tokens.js';
import { redisAvailable, REDIS_MISSING, startRedis, type RedisServer } from '../helpers/redis-server.js';
import { connect, type Recorder } from '../helpers/sockets.js';
import { eventually, startTestVigil, untilPast, type TestVigil } from '../helpers/vigil.js';

/** the adapter's channel of a room (namespace '/', sharded Pub/Sub) */
const channel = (room: string) => `vigil:socket.io#/#${room}#`;
let n = 0;
const person = (tag: string) => `fan-${tag}-${++n}-${randomBytes(3).toString('hex')}`;
type TimerView = { id: string; expiresAt: string };

describe.skipIf(!redisAvailable())(`Socket.IO fan-out over Redis${redisAvailable() ? '' : ` — ${REDIS_MISSING}`}`, () => {
  let redis: RedisServer;
  let a: TestVigil, b: TestVigil, c: TestVigil;
  let admin: ReturnType<typeof createClient>;
  const open: Recorder[] = [];
  /** closed after each case, so one failing case does not leave sockets that fail the next */
  const closeAfter: Recorder[] = [];
  afterEach(() => {
    for (const r of closeAfter.splice(0)) r.close();
  });
  const sock = async (v: TestVigil, token: string) => {
    const r = await connect(v.url, token);
    open.push(r);
    return r;
  };
  const subscribers = async (room: string) => {
    const reply = (await admin.sendCommand(['PUBSUB', 'SHARDNUMSUB', channel(room)])) as [string, number];
    return Number(reply[1]);
  };
  const publishes = async () => Number(/cmdstat_spublish:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);

  beforeAll(async () => {
    redis = await startRedis();
    const env = { REDIS_URL: redis.url, JWT_SECRET: randomBytes(32).toString('hex'), CONTACT_ID_KEY: randomBytes(32).toString('hex') };
    a = await startTestVigil(env, { manualTicks: true });
    b = await startTestVigil(env, { manualTicks: true });
    c = await startTestVigil(env, { manualTicks: true });
    admin = createClient({ url: redis.url });
    await admin.connect();
  });
  afterAll(async () => {
    for (const r of open) r.close();
    await Promise.allSettled([a?.stop(), b?.stop(), c?.stop()]);
    await admin?.close();
    await redis?.stop();
  });

  it("invariant 7 across replicas: an SOS escalated on one replica reaches its owner's sockets on that replica and another, and every moderator on all three, once each; a moderator who owns the timer gets one copy; nobody gets another's events", async () => {
    const x = person('x');
    const m = person('mod-owner');
    const tx = a.token(x);
    const tm = a.token(m, { admin: true });
    const xOnB = await sock(b, tx);
    const xOnA = await sock(a, tx); // on the escalating replica itself
    const ms = await sock(b, tm); // a moderator who is also an owner, on the owner's replica
    const modOnC = await sock(c, a.token(person('mod'), { admin: true }));
    const modOnA = await sock(a, a.token(person('mod'), { admin: true }));
    closeAfter.push(xOnB, xOnA, ms, modOnC, modOnA);
    for (const t of [tx, tm]) await a.api(t, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Sam', phone: '+14155550111' }] });
    const timerX = (await a.api(tx, 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer as TimerView;
    const timerM = (await a.api(tm, 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer as TimerView;
    await untilPast(timerX.expiresAt);
    await untilPast(timerM.expiresAt);
    expect((await a.vigil.sweeper.sweep()).escalated).toBe(2);

    // a later event from the same replica to each socket: everything published before it has arrived
    const markX = (await a.api(tx, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer as TimerView;
    const markM = (await a.api(tm, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer as TimerView;
    const armed = (r: Recorder, id: string) => r.named('timer.armed').some((p) => (p.timer as { id: string }).id === id);
    for (const r of [xOnA, xOnB]) await eventually(async () => armed(r, markX.id), 'the marker at an owner socket');
    await eventually(async () => armed(ms, markM.id), 'the marker at the moderator-owner');
    await eventually(async () => modOnC.named('sos.triggered').length >= 2, 'both SOS at the moderator on the third replica');
    await eventually(async () => modOnA.named('sos.triggered').length >= 2, 'both SOS at the moderator on the escalating replica');

    const timerIds = (r: Recorder, name: string) =>
      r
        .named(name)
        .map((p) => (p.incident as { timerId?: string } | undefined)?.timerId ?? (p.timer as { id: string }).id)
        .sort();
    const both = [timerX.id, timerM.id].sort();
    for (const r of [xOnA, xOnB]) {
      expect(timerIds(r, 'sos.triggered')).toEqual([timerX.id]);
      expect(timerIds(r, 'timer.expired')).toEqual([timerX.id]);
      expect(r.events.some((e) => JSON.stringify(e.payload).includes(timerM.id))).toBe(false);
    }
    for (const r of [modOnA, modOnC]) {
      expect(timerIds(r, 'sos.triggered')).toEqual(both);
      expect(r.named('timer.armed')).toHaveLength(0); // private to the owner
    }
    // the moderator-owner: their own SOS and expiry once (not once per room), and the other SOS as a moderator
    expect(timerIds(ms, 'sos.triggered')).toEqual(both);
    expect(timerIds(ms, 'timer.expired')).toEqual(both);
    for (const r of [xOnA, xOnB, ms, modOnA, modOnC]) {
      const ids = r.events.filter((e) => e.name !== 'ready').map((e) => e.payload.eventId);
      expect(new Set(ids).size).toBe(ids.length);
    }
  });

  it("a replica listens to a room's channel only while it holds a socket in the room: one subscription per replica, released with its last socket", async () => {
    const x = person('sub');
    const room = `user:${x}`;
    expect(await subscribers(room)).toBe(0);
    const s = await sock(b, a.token(x));
    // asked right after 'ready', no waiting (that the handshake waits for the subscription is checked with a fake fan-out below)
    expect(await subscribers(room)).toBe(1);
    const s2 = await sock(b, a.token(x));
    expect(await subscribers(room)).toBe(1); // one per replica, not per socket
    const s3 = await sock(c, a.token(x));
    expect(await subscribers(room)).toBe(2);
    s.close();
    s3.close();
    await eventually(async () => (await subscribers(room)) === 1, 'the channel released on c; b still has a socket');
    s2.close();
    await eventually(async () => (await subscribers(room)) === 0, 'the channel released once its last socket left');
    // the moderators' room likewise (the first case closed its moderators)
    await eventually(async () => (await subscribers('admins')) === 0, 'no moderator connected');
    const m1 = await sock(b, a.token(person('m'), { admin: true }));
    expect(await subscribers('admins')).toBe(1);
    const m2 = await sock(b, a.token(person('m'), { admin: true }));
    const m3 = await sock(c, a.token(person('m'), { admin: true }));
    expect(await subscribers('admins')).toBe(2);
    for (const r of [m1, m2, m3]) r.close();
    await eventually(async () => (await subscribers('admins')) === 0, 'the moderators channel released');
  });

  it("publishes nothing to a room no other replica listens to (the publishing replica's own socket gets the event directly)", async () => {
    const lonely = person('lonely');
    const tl = a.token(lonely);
    const onlyHere = await sock(a, tl); // on the publishing replica only: Redis counts a's own subscription
    const x = person('heard');
    const tx = a.token(x);
    const xs = await sock(b, tx);
    closeAfter.push(onlyHere, xs);
    const before = await publishes();
    const t1 = (await a.api(tl, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer as TimerView;
    const t2 = (await a.api(tx, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer as TimerView;
    const armed = (r: Recorder, id: string) => r.named('timer.armed').some((p) => (p.timer as { id: string }).id === id);
    await eventually(async () => armed(onlyHere, t1.id), 'the event at the local socket');
    await eventually(async () => armed(xs, t2.id), 'the event at the socket on another replica');
    expect((await publishes()) - before).toBe(1);
  });

  it('a burst reaches moderators as one events.batch per sweep group: 150 SOS cost at most 3 Redis publishes for every moderator on two replicas, plus one per event of the only person connected elsewhere', async () => {
    const N = 150; // three groups of 50 (the sweep's group commit), each published in one turn
    const people = Array.from({ length: N }, () => person('burst'));
    const modOnB = await sock(b, a.token(person('mod'), { admin: true }));
    const modOnC = await sock(c, a.token(person('mod'), { admin: true }));
    const watched = await sock(c, a.token(people[0]!)); // the one person connected, on another replica
    closeAfter.push(modOnB, modOnC, watched);
    const timers: TimerView[] = [];
    for (const p of people) timers.push((await a.api(a.token(p), 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer as TimerView);
    await untilPast(timers[timers.length - 1]!.expiresAt);
    const before = await publishes();
    expect((await a.vigil.sweeper.sweep()).escalated).toBe(N);

    for (const m of [modOnB, modOnC]) await eventually(async () => m.named('sos.triggered').length === N, 'every SOS at the moderator');
    await eventually(async () => watched.named('sos.triggered').length === 1, 'the SOS at the connected person');
    const sent = (await publishes()) - before;
    // both moderators got the same batches, each one emit (one Redis publish whatever the number of replicas listening)
    expect(modOnC.batches.map((x) => x.eventId)).toEqual(modOnB.batches.map((x) => x.eventId));
    expect(modOnB.batches.length).toBeLessThanOrEqual(3);
    expect(modOnB.named('timer.expired')).toHaveLength(N);
    // the person connected on c: timer.expired and sos.triggered, one publish each (after arming); the other 149 people: none
    expect(watched.events.filter((e) => e.name !== 'ready').map((e) => e.name)).toEqual(['timer.armed', 'timer.expired', 'sos.triggered']);
    expect(sent).toBe(modOnB.batches.length + 2);
    // within a batch, each event as it would have come alone, in publishing order
    const first = modOnB.batches[0]!.events.slice(0, 2);
    expect(first.map((e) => e.name)).toEqual(['timer.expired', 'sos.triggered']);
    expect((first[1]!.payload.incident as { timerId: string }).timerId).toBe((first[0]!.payload.timer as { id: string }).id);
  });

  it("a person cut off on one replica's command (disconnectUser) loses every socket on every replica; nobody else does", async () => {
    const m = person('revoked');
    const tm = a.token(m, { admin: true });
    const onA = await sock(a, tm);
    const onB = await sock(b, tm);
    const onC = await sock(c, tm);
    const other = await sock(c, a.token(person('mod'), { admin: true }));
    closeAfter.push(other);
    const reasons: string[] = [];
    for (const r of [onA, onB, onC]) r.socket.on('disconnect', (reason) => reasons.push(reason));
    b.vigil.disconnectUser(m);
    await eventually(async () => reasons.length === 3, 'the three sockets disconnected');
    expect(reasons).toEqual(['io server disconnect', 'io server disconnect', 'io server disconnect']);
    // the other moderator still gets events (a later one, from a)
    const x = person('after');
    const t = (await a.api(a.token(x), 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer as TimerView;
    await untilPast(t.expiresAt);
    expect((await a.vigil.sweeper.sweep()).escalated).toBe(1);
    await eventually(
      async () => other.named('sos.triggered').some((p) => (p.incident as { timerId: string }).timerId === t.id),
      'the SOS at the moderator who was not cut off',
    );
    expect(other.socket.connected).toBe(true);
  });

  it('handshakes in flight count against SOCKETS_PER_USER: of 8 sockets opened at once with a cap of 2, exactly 2 connect', async () => {
    const capped = await startTestVigil(
      {
        REDIS_URL: redis.url,
        JWT_SECRET: randomBytes(32).toString('hex'),
        CONTACT_ID_KEY: randomBytes(32).toString('hex'),
        SOCKETS_PER_USER: '2',
      },
      { manualTicks: true },
    );
    const pid = redis.pid()!;
    try {
      const t = capped.token(person('cap'));
      // Redis paused: every handshake waits for its room's subscription (at most 1 s), all at the same time
      process.kill(pid, 'SIGSTOP');
      const tries = await Promise.allSettled(Array.from({ length: 8 }, () => connect(capped.url, t)));
      process.kill(pid, 'SIGCONT');
      const ok = tries.filter((r): r is PromiseFulfilledResult<Recorder> => r.status === 'fulfilled').map((r) => r.value);
      closeAfter.push(...ok);
      expect(ok).toHaveLength(2);
      for (const r of tries) if (r.status === 'rejected') expect(String(r.reason)).toMatch(/too many connections/);
    } finally {
      process.kill(pid, 'SIGCONT');
      await capped.stop();
    }
  });

  it('stopping one replica leaves the sockets on the other replicas connected (its shutdown disconnects only its own)', async () => {
    const x = person('stay');
    const tx = a.token(x);
    const xs = await sock(b, tx);
    const onC = await sock(c, tx);
    let dropped: string | undefined;
    xs.socket.on('disconnect', (reason) => (dropped = reason));
    let droppedOnC: string | undefined;
    onC.socket.on('disconnect', (reason) => (droppedOnC = reason));
    await c.stop();
    // published after the stop: once it arrives, anything the stopping replica published has arrived too
    const t = (await a.api(tx, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer as TimerView;
    await eventually(
      async () => xs.named('timer.armed').some((p) => (p.timer as { id: string }).id === t.id),
      'an event after the stop at the socket on a replica that kept running',
    );
    expect(dropped).toBeUndefined();
    expect(xs.socket.connected).toBe(true);
    // its own sockets were closed by the stop
    await eventually(async () => droppedOnC !== undefined, 'the stopped replica dropping its own socket');
  });

  it("a Redis that stops answering (SIGSTOP) does not hold back the publishing replica's own sockets", async () => {
    const x = person('paused');
    const tx = a.token(x);
    const local = await sock(a, tx);
    const pid = redis.pid()!;
    process.kill(pid, 'SIGSTOP');
    try {
      const t = (await a.api(tx, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer as TimerView;
      expect(t.id).toBeDefined();
      await eventually(
        async () => local.named('timer.armed').some((p) => (p.timer as { id: string }).id === t.id),
        'the event at the local socket while Redis is paused',
        4_000,
        20,
      );
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  });
});

describe.skipIf(!redisAvailable())(`a Redis restarted empty${redisAvailable() ? '' : ` — ${REDIS_MISSING}`}`, () => {
  it('events cross replicas again once Redis is back (each replica subscribes its rooms again); none crashes meanwhile', async () => {
    const redis = await startRedis();
    const env = { REDIS_URL: redis.url, JWT_SECRET: randomBytes(32).toString('hex'), CONTACT_ID_KEY: randomBytes(32).toString('hex') };
    const a = await startTestVigil(env, { manualTicks: true });
    const b = await startTestVigil(env, { manualTicks: true });
    const sockets: Recorder[] = [];
    try {
      const x = person('restart');
      const tx = a.token(x);
      const mod = await connect(b.url, a.token(person('mod'), { admin: true }));
      const xs = await connect(b.url, tx);
      sockets.push(mod, xs);
      const t = (await a.api(tx, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer as TimerView;
      await redis.stop();
      expect((await a.api(tx, 'POST', `/v1/timers/${t.id}/extend`, { seconds: 60 })).status).toBe(200);
      await redis.start();
      // each try is a new fact (an extension) until one crosses
      await eventually(
        async () => {
          await a.api(tx, 'POST', `/v1/timers/${t.id}/extend`, { seconds: 60 });
          return xs.named('timer.extended').length > 0;
        },
        'an extension from a at the socket on b after the restart',
        15_000,
        250,
      );
      const y = person('restart-sos');
      const ty = (await a.api(a.token(y), 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer as TimerView;
      await untilPast(ty.expiresAt);
      expect((await a.vigil.sweeper.sweep()).escalated).toBe(1);
      await eventually(async () => mod.named('sos.triggered').length === 1, 'the SOS from a at the moderator on b');
    } finally {
      for (const r of sockets) r.close();
      await Promise.allSettled([a.stop(), b.stop()]);
      await redis.stop();
    }
  }, 60_000);
});

describe.skipIf(!redisAvailable())(`emits waiting for Redis${redisAvailable() ? '' : ` — ${REDIS_MISSING}`}`, () => {
  it('while Redis does not answer, at most maxWaiting emits wait for it; the rest are dropped and counted, and emits go out again once it answers', async () => {
    const redis = await startRedis();
    const log = pino({ level: 'silent' });
    const servers: { http: ReturnType<typeof createServer>; io: Server }[] = [];
    const links = [await connectRedisAdapter(redis.url, log), await connectRedisAdapter(redis.url, log)];
    const drops: string[] = [];
    const pid = redis.pid()!;
    let client: Recorder | undefined;
    try {
      for (const link of links) {
        const http = createServer();
        const io = new Server(http, { adapter: link.adapter });
        await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
        servers.push({ http, io });
      }
      const secret = randomBytes(16).toString('hex');
      const [pubSide, listenSide] = servers as [(typeof servers)[0], (typeof servers)[0]];
      listenSide.io.use((socket, next) => {
        void socket.join('user:q');
        void links[1]!.listening(['user:q']).then(() => next());
      });
      listenSide.io.on('connection', (socket) => socket.emit('ready', {}));
      client = await connect(`http://127.0.0.1:${(listenSide.http.address() as AddressInfo).port}`, signToken(secret, { sub: 'q' }));
      const publisher = createPublisher(pubSide.io, {
        log,
        replicas: links[0],
        maxWaiting: 5,
        onDropped: (n, reason) => drops.push(...Array.from({ length: n }, () => reason)),
      });
      const event = (name: string) => ({ name, eventId: name, userId: 'q', toAdmins: false, payload: { eventId: name } }) as never;
      process.kill(pid, 'SIGSTOP');
      // one emit per turn: five wait for Redis's answer, the next five are dropped
      for (let i = 0; i < 10; i++) {
        publisher.publish(event(`e${i}`));
        await new Promise((r) => setImmediate(r));
      }
      process.kill(pid, 'SIGCONT');
      // a marker sent once the waiting ones have gone: everything that waited arrived before it
      await eventually(
        async () => {
          if (!client!.events.some((e) => e.name === 'marker')) publisher.publish(event('marker'));
          return client!.events.some((e) => e.name === 'marker');
        },
        'the marker after Redis answers again',
        10_000,
        50,
      );
      const got = client.events.map((e) => e.name).filter((n) => n !== 'ready');
      expect(got.slice(0, 5)).toEqual(['e0', 'e1', 'e2', 'e3', 'e4']);
      expect(got.filter((g) => g.startsWith('e'))).toHaveLength(5);
      // the five dropped are counted (vigil_fanout_dropped_total{reason="backlog"}); markers tried while it drained too
      expect(drops.filter((d) => d === 'backlog').length).toBeGreaterThanOrEqual(5);
      expect(drops.filter((d) => d === 'error')).toEqual([]);
    } finally {
      process.kill(pid, 'SIGCONT');
      client?.close();
      for (const s of servers) {
        s.io.local.disconnectSockets(true);
        s.io.engine.close();
        s.http.close();
      }
      await Promise.all(links.map((l) => l.close()));
      await redis.stop();
    }
  }, 30_000);
});

describe('the handshake and the other replicas', () => {
  it("a socket is connected only once its rooms are listened to (so the client's catch-up read after connecting comes after)", async () => {
    const order: string[] = [];
    const asked: string[][] = [];
    const joinedFirst: boolean[] = [];
    let server: Server | undefined;
    const replicas: Replicas = {
      adapter: Adapter,
      listening(rooms) {
        asked.push(rooms);
        // the adapter subscribes to a room when its first socket joins: joined before asked
        joinedFirst.push(...rooms.map((r) => server?.of('/').adapter.rooms.has(r) === true));
        // resolved on a later turn than the handshake's own: a handshake that did not wait would connect first
        return new Promise((resolve) =>
          setTimeout(() => {
            order.push('listening');
            resolve();
          }, 0),
        );
      },
      heardElsewhere: async () => new Set(),
    };
    const http = createServer();
    const secret = randomBytes(32).toString('hex');
    const rt = createRealtime(http, {
      jwtSecret: secret,
      metrics: createMetrics({ replica: 't', collectDefault: false }),
      log: pino({ level: 'silent' }),
      replicas,
    });
    server = rt.io;
    rt.io.on('connection', () => order.push('connection'));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    let client: Recorder | undefined;
    try {
      client = await connect(`http://127.0.0.1:${(http.address() as AddressInfo).port}`, signToken(secret, { sub: 'hs-1', admin: true }));
      expect(asked.map((rooms) => [...rooms].sort())).toEqual([['admins', 'user:hs-1']]);
      expect(joinedFirst).toEqual([true, true]);
      expect(order).toEqual(['listening', 'connection']);
    } finally {
      client?.close();
      await rt.close();
      http.close();
    }
  });
});
