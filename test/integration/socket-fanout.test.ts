/**
 * Socket.IO across replicas through a real throwaway Redis, in both fan-out modes
 * (SOCKET_FANOUT): events reach the owner's and the moderators' sockets on other replicas,
 * once each; with sharded Pub/Sub a replica hears a person's room only while it holds one
 * of their sockets; and stopping one replica does not drop the sockets of the others.
 * Three in-process replicas, each on its own data dir (the fan-out does not go through the store).
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createClient } from 'redis';
import { Server } from 'socket.io';
import { io as ioClient } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedisFanout, redisMajorMinor } from '../../src/realtime/redis-adapter.js';
import { redisAvailable, REDIS_MISSING, startRedis, type RedisServer } from '../helpers/redis-server.js';
import { connect, type Recorder } from '../helpers/sockets.js';
import { eventually, startTestVigil, untilPast, type TestVigil } from '../helpers/vigil.js';

const modes = ['sharded', 'classic'] as const;
const CHANNEL_PREFIX = 'vigil:socket.io#/#';
let n = 0;
const person = (tag: string) => `fan-${tag}-${++n}-${randomBytes(3).toString('hex')}`;

describe.skipIf(!redisAvailable())(`Socket.IO fan-out over Redis${redisAvailable() ? '' : ` — ${REDIS_MISSING}`}`, () => {
  describe.each(modes)('SOCKET_FANOUT=%s', (mode) => {
    let redis: RedisServer;
    let a: TestVigil, b: TestVigil, c: TestVigil;
    let admin: ReturnType<typeof createClient>;
    const open: Recorder[] = [];
    const sock = async (v: TestVigil, token: string) => {
      const r = await connect(v.url, token);
      open.push(r);
      return r;
    };

    beforeAll(async () => {
      redis = await startRedis();
      const env = { REDIS_URL: redis.url, JWT_SECRET: randomBytes(32).toString('hex'), SOCKET_FANOUT: mode };
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

    it("invariant 7 across replicas: an SOS escalated on one replica reaches its owner's socket on another and every moderator on a third, once each; a moderator who owns the timer gets one copy; nobody gets another's events", async () => {
      const x = person('x');
      const m = person('mod-owner');
      const tx = a.token(x);
      const tm = a.token(m, { admin: true });
      const xs = await sock(b, tx);
      const ms = await sock(b, tm); // a moderator who is also an owner, on the owner's replica
      const mod = await sock(c, a.token(person('mod'), { admin: true }));
      for (const t of [tx, tm]) await a.api(t, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Sam', phone: '+14155550111' }] });
      const timerX = (await a.api(tx, 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer as { id: string; expiresAt: string };
      const timerM = (await a.api(tm, 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer as { id: string; expiresAt: string };
      await untilPast(timerX.expiresAt);
      await untilPast(timerM.expiresAt);
      expect((await a.vigil.sweeper.sweep()).escalated).toBe(2);

      await eventually(async () => mod.named('sos.triggered').length >= 2, 'both SOS at the moderator on the third replica');
      await eventually(async () => xs.named('sos.triggered').length >= 1, "the SOS at its owner's socket on another replica");
      // a later event from the same replica to the same socket: everything published before it has arrived
      const marker = (await a.api(tm, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer as { id: string };
      await eventually(
        async () => ms.named('timer.armed').some((p) => (p.timer as { id: string }).id === marker.id),
        'the marker event at the moderator-owner',
      );

      const timerIdsOf = (r: Recorder, name: string) =>
        r.named(name).map((p) => ((p.incident ?? p.timer) as { timerId?: string; id: string }).timerId ?? (p.timer as { id: string }).id);
      expect(timerIdsOf(mod, 'sos.triggered').sort()).toEqual([timerX.id, timerM.id].sort());
      expect(timerIdsOf(xs, 'sos.triggered')).toEqual([timerX.id]);
      expect(timerIdsOf(xs, 'timer.expired')).toEqual([timerX.id]);
      // the moderator-owner: their own SOS and expiry once (not once per room), and the other SOS as a moderator
      expect(timerIdsOf(ms, 'sos.triggered').sort()).toEqual([timerX.id, timerM.id].sort());
      expect(timerIdsOf(ms, 'timer.expired').sort()).toEqual([timerX.id, timerM.id].sort());
      // nothing of the other person's own events, and no moderator gets private ones
      expect(xs.events.some((e) => JSON.stringify(e.payload).includes(timerM.id))).toBe(false);
      expect(mod.named('timer.armed')).toHaveLength(0);
      const ids = ms.events.filter((e) => e.name !== 'ready').map((e) => e.payload.eventId);
      expect(new Set(ids).size).toBe(ids.length);
    });

    // the classic mode has no per-room channels: this case is the sharded mode's alone
    if (mode === 'sharded')
      it("sharded: a replica subscribes to a person's room only while one of its sockets is in it, so other replicas never receive that person's events", async () => {
        const x = person('sub');
        const channel = `${CHANNEL_PREFIX}user:${x}#`;
        const subscribers = async () => {
          const reply = (await admin.sendCommand(['PUBSUB', 'SHARDNUMSUB', channel])) as [string, number];
          return Number(reply[1]);
        };
        expect(await subscribers()).toBe(0);
        const s = await sock(b, a.token(x));
        await eventually(async () => (await subscribers()) === 1, 'the room channel subscribed on the replica with the socket');
        const s2 = await sock(b, a.token(x));
        expect(await subscribers()).toBe(1); // one subscription per replica, not per socket
        s.close();
        s2.close();
        await eventually(async () => (await subscribers()) === 0, 'the room channel released once its last socket left');
        // the moderators' room: one subscription per replica holding a moderator socket (the first
        // case left moderators on b and c); a second moderator on b adds none, one on a adds a
        const admins = async () =>
          Number(((await admin.sendCommand(['PUBSUB', 'SHARDNUMSUB', `${CHANNEL_PREFIX}admins#`])) as [string, number])[1]);
        expect(await admins()).toBe(2);
        const mod2 = await sock(b, a.token(person('mod2'), { admin: true }));
        const mod = await sock(a, a.token(person('mod3'), { admin: true }));
        await eventually(async () => (await admins()) === 3, 'the moderators channel on each replica with a moderator');
        mod.close();
        mod2.close();
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
      const t = (await a.api(tx, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer as { id: string };
      await eventually(
        async () => xs.named('timer.armed').some((p) => (p.timer as { id: string }).id === t.id),
        'an event after the stop at the socket on a replica that kept running',
      );
      expect(dropped).toBeUndefined();
      expect(xs.socket.connected).toBe(true);
      // its own sockets were closed by the stop
      await eventually(async () => droppedOnC !== undefined, 'the stopped replica dropping its own socket');
    });
  });
});

describe.skipIf(!redisAvailable())(`the fan-out with Redis paused${redisAvailable() ? '' : ` — ${REDIS_MISSING}`}`, () => {
  it.each(modes)(
    "%s: a Redis that stops answering (SIGSTOP) holds this replica's own sockets back by at most the publish wait, and fails nothing",
    async (mode) => {
      const redis = await startRedis();
      const fanout = await connectRedisFanout(redis.url, pino({ level: 'silent' }), { mode, publishWaitMs: 300 });
      const http = createServer();
      const io = new Server(http, { adapter: fanout.adapter });
      await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
      io.on('connection', (s) => void s.join('user:p'));
      const client = ioClient(url, { transports: ['websocket'], reconnection: false, forceNew: true });
      const got: number[] = [];
      client.on('hello', (n: number) => got.push(n));
      const pid = redis.pid()!;
      try {
        await new Promise<void>((resolve, reject) => {
          client.once('connect', () => resolve());
          client.once('connect_error', reject);
        });
        await eventually(async () => io.of('/').adapter.rooms.get('user:p')?.size === 1, 'the socket in its room');
        io.to('user:p').emit('hello', 1);
        await eventually(async () => got.length === 1, 'the event while Redis answers', 10_000, 20);
        process.kill(pid, 'SIGSTOP');
        io.to('user:p').emit('hello', 2);
        io.to('user:p').emit('hello', 3);
        // sharded: the adapter gives an event to its own sockets once Redis has taken the publish;
        // with no bound the two would wait for Redis for ever (node-redis's own timeout, 5 s, is off).
        // classic publishes without waiting: checked so that an adapter upgrade that waits is caught.
        await eventually(async () => got.length === 3, 'the events after the publish wait', 4_000, 20);
        expect(got).toEqual([1, 2, 3]);
      } finally {
        process.kill(pid, 'SIGCONT');
        client.close();
        io.close();
        await fanout.close();
        await redis.stop();
      }
    },
    30_000,
  );

  it('reads the Redis version from INFO (auto picks sharded from 7.0)', () => {
    expect(redisMajorMinor('# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:0\r\n')).toEqual([7, 0]);
    expect(redisMajorMinor('redis_version:6.2.14\r\n')).toEqual([6, 2]);
    expect(redisMajorMinor('nothing here')).toBeUndefined();
  });
});
