/** Socket.IO auth, rooms and events with real clients against a real in-process Vigil. */
import { io } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../helpers/sockets.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';

let v: TestVigil;
beforeAll(async () => {
  v = await startTestVigil();
});
afterAll(async () => {
  await v?.stop();
});

describe('realtime', () => {
  it('answers a long-polling handshake (Socket.IO owns /socket.io/, Express the rest) and keeps serving', async () => {
    const r = await fetch(`${v.url}/socket.io/?EIO=4&transport=polling`);
    expect(r.status).toBe(200);
    expect(await r.text()).toMatch(/"sid"/);
    expect((await fetch(`${v.url}/livez`)).status).toBe(200);
  });

  it('connects over long-polling too (clients behind proxies that block websockets)', async () => {
    const s = io(v.url, { auth: { token: v.token('poller') }, transports: ['polling'], reconnection: false, forceNew: true });
    const ready = await new Promise<{ userId: string }>((resolve, reject) => {
      s.once('ready', resolve);
      s.once('connect_error', reject);
    });
    expect(ready.userId).toBe('poller');
    s.close();
  });

  it('refuses a socket without a valid token', async () => {
    const s = io(v.url, { auth: { token: 'nope' }, transports: ['websocket'], reconnection: false, forceNew: true });
    const err = await new Promise<Error>((resolve) => s.once('connect_error', resolve));
    expect(err.message).toMatch(/unauthorized/);
    s.close();
  });

  it("invariant 7: a person never receives another person's events; moderators receive every SOS", async () => {
    const alice = v.token('alice-rt', { name: 'Alice' });
    const bob = v.token('bob-rt', { name: 'Bob' });
    const a = await connect(v.url, alice);
    const b = await connect(v.url, bob);
    const m = await connect(v.url, v.token('mod-rt', { admin: true }));
    try {
      await v.api(alice, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Sam', phone: '+14155550111' }] });
      await v.api(bob, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Kim', phone: '+14155550112' }] });
      const ta = (await v.api(alice, 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer;
      const tb = (await v.api(bob, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
      await v.api(bob, 'POST', `/v1/timers/${tb.id}/extend`, { seconds: 60 });
      await v.api(bob, 'POST', `/v1/timers/${tb.id}/safe`);

      await eventually(
        async () => m.named('delivery.updated').some((p) => (p.delivery as { status: string }).status === 'sent'),
        'delivery event at the moderator',
      );
      await eventually(async () => a.named('delivery.updated').length >= 1, "delivery event at alice's socket");

      // alice: her own lifecycle, nothing of bob's
      expect(a.events.map((e) => e.name)).toEqual(
        expect.arrayContaining(['timer.armed', 'timer.expired', 'sos.triggered', 'delivery.updated']),
      );
      const owners = (r: typeof a) => r.events.map((e) => (e.payload.timer ?? e.payload.incident ?? e.payload) as { userId?: string });
      expect(a.events.every((e) => JSON.stringify(e.payload).includes(tb.id) === false)).toBe(true);
      expect(
        owners(a)
          .filter((o) => o.userId !== undefined)
          .every((o) => o.userId === 'alice-rt'),
      ).toBe(true);
      // bob: armed, extended, safe — and nothing of alice's
      expect(b.events.map((e) => e.name).filter((n) => n !== 'ready')).toEqual(['timer.armed', 'timer.extended', 'timer.safe']);
      expect(b.events.every((e) => !JSON.stringify(e.payload).includes(ta.id))).toBe(true);
      // moderator: the SOS and its deliveries, but not bob's private arm/extend/safe
      const sos = m.named('sos.triggered');
      expect(sos).toHaveLength(1);
      // moderators receive theirs in events.batch (the recorder unpacks it), the person alone
      expect(m.batches.flatMap((x) => x.events).filter((e) => e.name === 'sos.triggered')).toHaveLength(1);
      expect(a.batches).toEqual([]);
      expect((sos[0]!.incident as { timerId: string }).timerId).toBe(ta.id);
      expect(m.events.some((e) => e.name === 'timer.armed')).toBe(false);
      // every payload carries a stable eventId; deliveries never show the full number
      for (const r of [a, b, m]) for (const e of r.events) if (e.name !== 'ready') expect(typeof e.payload.eventId).toBe('string');
      const d = m.named('delivery.updated')[0]!.delivery as { phone: string };
      expect(d.phone).not.toContain('5550111');
    } finally {
      a.close();
      b.close();
      m.close();
    }
  });
});
