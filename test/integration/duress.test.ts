/**
 * The duress code (issue 38 item 3; docs/security.md, "Duress code"), on a real in-process
 * Vigil (SQLite) with real sockets, sweeping and dispatching by hand. "I'm safe" or cancel sent
 * with the duress PIN answers exactly as a genuine one (status, headers, body, apart from ids and
 * times), opens one silent incident that moderators see at once and the contacts are texted
 * about, and nothing the phone reads (timer, timer list, inbox, its sockets) shows it. One open
 * SOS per person holds when the sweep escalates the same timer at the same moment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSockets, type Recorder } from '../helpers/sockets.js';
import { eventually, startTestVigil, untilPast, type TestVigil } from '../helpers/vigil.js';
import type { ApiAnswer } from '../helpers/http.js';

const PIN = '4711';
const OTHER_PIN = '1234';
/** headers that differ between any two answers, genuine or not */
const PER_ANSWER_HEADERS = ['date', 'x-request-id', 'etag', 'ratelimit', 'ratelimit-policy', 'ratelimit-remaining', 'ratelimit-reset'];
/** fields that are ids or times (an incident's reference is derived from its id) */
const ID_OR_TIME = /^(id|reference|timerId|incidentId|startedAt|expiresAt|resolvedAt|updatedAt|createdAt|deadline|serverTime)$/;

function shape(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(shape);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, ID_OR_TIME.test(k) ? '<id|time>' : shape(x)]),
    );
  return v;
}
const headersOf = (a: ApiAnswer) => Object.fromEntries(Object.entries(a.headers).filter(([k]) => !PER_ANSWER_HEADERS.includes(k)));

describe('duress PIN', () => {
  let t: TestVigil;
  const sockets = openSockets();
  let mod: Recorder;

  beforeAll(async () => {
    t = await startTestVigil({}, { manualTicks: true });
    mod = await sockets.connect(t.url, t.token('mod', { admin: true }));
  });
  afterAll(async () => {
    sockets.closeAll();
    await t?.stop();
  });

  const contacts = [{ name: 'Bob Brother', phone: '+14155550701' }];
  async function person(user: string): Promise<string> {
    const tok = t.token(user, { name: user });
    expect((await t.api(tok, 'PUT', '/v1/me/contacts', { contacts })).status).toBe(200);
    return tok;
  }
  async function arm(tok: string, seconds = 600): Promise<{ id: string; expiresAt: string }> {
    const r = await t.api(tok, 'POST', '/v1/timers', { durationSeconds: seconds, locationName: 'Blue Bottle Café' });
    expect(r.status).toBe(201);
    return r.body.timer as { id: string; expiresAt: string };
  }
  const openOf = async (user: string) =>
    (
      (await t.api(t.token('mod', { admin: true }), 'GET', '/v1/admin/incidents')).body.incidents as {
        id: string;
        userId: string;
        status: string;
        sources: string[];
        deliveries: { status: string }[];
      }[]
    ).filter((i) => i.userId === user && (i.status === 'active' || i.status === 'acknowledged'));

  it('PUT /v1/me/duress takes 4 to 12 digits only, never answers the PIN; DELETE removes it (idempotent)', async () => {
    const tok = await person('pin-rules');
    for (const bad of ['123', '1234567890123', '12a4', 4711, '']) {
      const r = await t.api(tok, 'PUT', '/v1/me/duress', { pin: bad });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('validation_failed');
    }
    expect((await t.api(tok, 'PUT', '/v1/me/duress', { pin: PIN, extra: 1 })).status).toBe(400);
    const set = await t.api(tok, 'PUT', '/v1/me/duress', { pin: PIN });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ duress: { set: true } });
    expect(JSON.stringify(set.body)).not.toContain(PIN);
    expect((await t.api(tok, 'DELETE', '/v1/me/duress')).body).toEqual({ duress: { set: false } });
    expect((await t.api(tok, 'DELETE', '/v1/me/duress')).status).toBe(200);
    // a check-in with a malformed PIN is refused like any bad body
    const timer = await arm(tok);
    const bad = await t.api(tok, 'POST', `/v1/timers/${timer.id}/safe`, { pin: 'abcd' });
    expect(bad.status).toBe(400);
    expect((await t.api(tok, 'POST', `/v1/timers/${timer.id}/safe`)).status).toBe(200);
  });

  for (const command of ['safe', 'cancel'] as const) {
    it(`${command} with the duress PIN answers as a genuine one, pages moderators, texts the contacts, and the phone sees nothing`, async () => {
      const user = `duress-${command}`;
      const tok = await person(user);
      expect((await t.api(tok, 'PUT', '/v1/me/duress', { pin: PIN })).status).toBe(200);
      const phone = await sockets.connect(t.url, tok);

      // genuine: another PIN (the app may always send one) and no PIN at all
      const g1 = await arm(tok);
      const genuine = await t.api(tok, 'POST', `/v1/timers/${g1.id}/${command}`, { pin: OTHER_PIN });
      const g2 = await arm(tok);
      const plain = await t.api(tok, 'POST', `/v1/timers/${g2.id}/${command}`);
      expect(await openOf(user)).toEqual([]);
      const inboxBefore = (await t.api(tok, 'GET', '/v1/me/notifications')).body;
      const seenBefore = phone.events.length;

      const d = await arm(tok);
      const duress = await t.api(tok, 'POST', `/v1/timers/${d.id}/${command}`, { pin: PIN });

      // the same answer, field by field, apart from ids and times
      for (const other of [genuine, plain]) {
        expect(duress.status).toBe(other.status);
        expect(headersOf(duress)).toEqual(headersOf(other));
        expect(shape(duress.body)).toEqual(shape(other.body));
      }
      expect(duress.body.timer.status).toBe(command === 'safe' ? 'safe' : 'cancelled');

      // moderators: one open duress incident, paged at once
      const [incident, ...more] = await openOf(user);
      expect(more).toEqual([]);
      expect(incident?.sources).toEqual(['duress']);
      await eventually(
        async () => mod.named('sos.triggered').some((p) => (p.incident as { id: string }).id === incident?.id),
        'sos.triggered to moderators',
      );
      // the contacts are texted through the normal delivery path
      await t.vigil.dispatcher.tick();
      await eventually(async () => (await openOf(user))[0]?.deliveries.every((x) => x.status === 'sent'), 'the SOS text sent');
      expect((await openOf(user))[0]?.deliveries).toHaveLength(1);

      // the phone: its timer and list show a plain check-in, its inbox and sockets nothing of the SOS
      const own = await t.api(tok, 'GET', `/v1/timers/${d.id}`);
      expect(own.body.timer.incidentId).toBeUndefined();
      expect(shape(own.body.timer)).toEqual(shape(duress.body.timer));
      const list = await t.api(tok, 'GET', '/v1/timers');
      expect(JSON.stringify(list.body)).not.toContain(incident?.id ?? '');
      expect((await t.api(tok, 'GET', '/v1/me/notifications')).body.notifications).toEqual(inboxBefore.notifications);
      await eventually(
        async () => mod.named('delivery.updated').some((p) => (p.delivery as { incidentId: string }).incidentId === incident?.id),
        'delivery events to moderators',
      );
      const heard = phone.events.slice(seenBefore).map((e) => e.name);
      expect(heard).toEqual(['timer.armed', command === 'safe' ? 'timer.safe' : 'timer.cancelled']);
      expect(JSON.stringify(phone.events)).not.toContain(incident?.id ?? '');

      // a moderator acknowledges and resolves it: still nothing for the phone
      const modTok = t.token('mod', { admin: true });
      expect((await t.api(modTok, 'POST', `/v1/admin/incidents/${incident?.id ?? ''}/ack`)).status).toBe(200);
      expect((await t.api(modTok, 'POST', `/v1/admin/incidents/${incident?.id ?? ''}/resolve`)).status).toBe(200);
      await t.vigil.dispatcher.tick();
      // control: a genuine panic SOS of the same person afterwards reaches the inbox (its texts
      // recorded in the background, after the duress texts were): by then the duress ones would be there too
      const panic = await t.api(tok, 'POST', '/v1/sos', {});
      expect(panic.status).toBe(201);
      await t.vigil.dispatcher.tick();
      const inbox = await eventually(async () => {
        const list = (await t.api(tok, 'GET', '/v1/me/notifications')).body.notifications as { incidentId?: string }[];
        return list.some((n) => n.incidentId === panic.body.incident.id) ? list : undefined;
      }, 'the genuine SOS in the inbox');
      expect(inbox.filter((n) => n.incidentId === incident?.id)).toEqual([]);
      expect(JSON.stringify(phone.events)).not.toContain(incident?.id ?? '');
      expect((await t.api(modTok, 'POST', `/v1/admin/incidents/${String(panic.body.incident.id)}/resolve`)).status).toBe(200);
    });
  }

  it('after the SOS went out: the duress "I\'m safe" answers as a genuine one (a false alarm) but the incident stays open, marked duress', async () => {
    const modTok = t.token('mod', { admin: true });
    /** a 1 s timer of the person, swept: its SOS is out */
    const expired = async (tok: string) => {
      const timer = await arm(tok, 1);
      await untilPast(timer.expiresAt);
      expect((await t.vigil.sweeper.sweep()).escalated).toBe(1);
      return timer;
    };
    const tok = await person('after-sos');
    expect((await t.api(tok, 'PUT', '/v1/me/duress', { pin: PIN })).status).toBe(200);
    const g = await expired(tok);
    const genuine = await t.api(tok, 'POST', `/v1/timers/${g.id}/safe`, { pin: OTHER_PIN });
    expect(genuine.body.incident.status).toBe('false_alarm');
    expect(await openOf('after-sos')).toEqual([]);
    await t.vigil.dispatcher.tick();

    const d = await expired(tok);
    const duress = await t.api(tok, 'POST', `/v1/timers/${d.id}/safe`, { pin: PIN });
    expect(duress.status).toBe(genuine.status);
    expect(headersOf(duress)).toEqual(headersOf(genuine));
    expect(shape(duress.body)).toEqual(shape(genuine.body));
    const [open, ...more] = await openOf('after-sos');
    expect(more).toEqual([]);
    expect(open?.sources).toEqual(['timer', 'duress']);
    expect((await t.api(modTok, 'POST', `/v1/admin/incidents/${open?.id ?? ''}/resolve`)).status).toBe(200);
  });

  it('DURESS_TEXT_CONTACTS=false: moderators are paged, nobody is texted', async () => {
    const quiet = await startTestVigil({ DURESS_TEXT_CONTACTS: 'false' }, { manualTicks: true });
    try {
      const tok = quiet.token('quiet', { name: 'quiet' });
      expect((await quiet.api(tok, 'PUT', '/v1/me/contacts', { contacts })).status).toBe(200);
      expect((await quiet.api(tok, 'PUT', '/v1/me/duress', { pin: PIN })).status).toBe(200);
      const timer = (await quiet.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer as { id: string };
      expect((await quiet.api(tok, 'POST', `/v1/timers/${timer.id}/cancel`, { pin: PIN })).status).toBe(200);
      await quiet.vigil.dispatcher.tick();
      const list = (await quiet.api(quiet.token('mod', { admin: true }), 'GET', '/v1/admin/incidents')).body.incidents as {
        sources: string[];
        status: string;
        deliveries: unknown[];
      }[];
      expect(list).toHaveLength(1);
      expect(list[0]).toMatchObject({ sources: ['duress'], status: 'active', deliveries: [] });
    } finally {
      await quiet.stop();
    }
  });

  /** The store fails every write that would open the duress SOS, as a replica dying right after the check-in's write. */
  function failOpeningSos(): { restore(): void; failed(): number } {
    const store = t.vigil.store;
    const real = store.raisePanic;
    let failed = 0;
    Object.assign(store, {
      raisePanic: (...args: Parameters<typeof real>) => {
        if (args[0].source !== 'duress') return real(...args);
        failed++;
        return Promise.reject(new Error('injected: the replica died after the check-in write'));
      },
    });
    return { restore: () => void Object.assign(store, { raisePanic: real }), failed: () => failed };
  }

  for (const command of ['safe', 'cancel'] as const) {
    it(`invariant 4: ${command} with the duress PIN whose SOS write fails after the check-in: the answer is the genuine one, the sweep's repair opens the SOS once, the phone sees nothing`, async () => {
      const user = `owed-${command}`;
      const tok = await person(user);
      expect((await t.api(tok, 'PUT', '/v1/me/duress', { pin: PIN })).status).toBe(200);
      const phone = await sockets.connect(t.url, tok);
      const g = await arm(tok);
      const genuine = await t.api(tok, 'POST', `/v1/timers/${g.id}/${command}`, { pin: OTHER_PIN }, { 'Idempotency-Key': `g-${user}` });
      const seenBefore = phone.events.length;
      const d = await arm(tok);
      const fault = failOpeningSos();
      let duress: ApiAnswer;
      try {
        duress = await t.api(tok, 'POST', `/v1/timers/${d.id}/${command}`, { pin: PIN }, { 'Idempotency-Key': `d-${user}` });
      } finally {
        fault.restore();
      }
      expect(fault.failed()).toBe(1);
      expect(duress.status).toBe(genuine.status);
      expect(headersOf(duress)).toEqual(headersOf(genuine));
      expect(shape(duress.body)).toEqual(shape(genuine.body));
      expect(await openOf(user)).toEqual([]);

      // the owed SOS is on the timer, and nowhere the phone reads
      expect((await t.vigil.store.getTimer(d.id))?.duressPending).toBe(true);
      const own = await t.api(tok, 'GET', `/v1/timers/${d.id}`);
      expect(shape(own.body.timer)).toEqual(shape(duress.body.timer));
      expect(JSON.stringify((await t.api(tok, 'GET', '/v1/timers')).body)).not.toMatch(/duress/i);

      const report = await t.vigil.sweeper.sweep();
      expect(report.panicsRepaired).toBeGreaterThanOrEqual(1);
      const [incident, ...more] = await openOf(user);
      expect(more).toEqual([]);
      expect(incident?.sources).toEqual(['duress']);
      expect(incident?.id.startsWith('drs_')).toBe(true);
      expect((await t.vigil.store.getTimer(d.id))?.duressPending).toBeUndefined();
      await eventually(
        async () => mod.named('sos.triggered').some((p) => (p.incident as { id: string }).id === incident?.id),
        'sos.triggered to moderators',
      );
      await t.vigil.dispatcher.tick();
      await eventually(async () => (await openOf(user))[0]?.deliveries.every((x) => x.status === 'sent'), 'the SOS text sent');
      expect((await openOf(user))[0]?.deliveries).toHaveLength(1);

      // a replay of the key and further sweeps open nothing more
      const replay = await t.api(tok, 'POST', `/v1/timers/${d.id}/${command}`, { pin: PIN }, { 'Idempotency-Key': `d-${user}` });
      expect(replay.status).toBe(200);
      await t.vigil.sweeper.sweep();
      expect((await openOf(user)).map((i) => i.id)).toEqual([incident?.id]);
      expect((await openOf(user))[0]?.deliveries).toHaveLength(1);

      const heard = phone.events.slice(seenBefore).map((e) => e.name);
      expect(heard).toEqual(['timer.armed', command === 'safe' ? 'timer.safe' : 'timer.cancelled']);
      expect(JSON.stringify(phone.events)).not.toContain(incident?.id ?? '');
      expect(JSON.stringify((await t.api(tok, 'GET', '/v1/me/notifications')).body)).not.toContain(incident?.id ?? '');
      expect((await t.api(t.token('mod', { admin: true }), 'POST', `/v1/admin/incidents/${incident?.id ?? ''}/resolve`)).status).toBe(200);
    });
  }

  it('invariant 4: a replay of the same Idempotency-Key with the duress PIN opens the SOS its first request left owed (once)', async () => {
    const user = 'owed-replay';
    const tok = await person(user);
    expect((await t.api(tok, 'PUT', '/v1/me/duress', { pin: PIN })).status).toBe(200);
    const d = await arm(tok);
    const fault = failOpeningSos();
    let first: ApiAnswer;
    try {
      first = await t.api(tok, 'POST', `/v1/timers/${d.id}/safe`, { pin: PIN }, { 'Idempotency-Key': 'replay-1' });
    } finally {
      fault.restore();
    }
    expect(first.status).toBe(200);
    expect(await openOf(user)).toEqual([]);
    // no sweep in between: the replay itself opens it
    const replay = await t.api(tok, 'POST', `/v1/timers/${d.id}/safe`, { pin: PIN }, { 'Idempotency-Key': 'replay-1' });
    expect(replay.status).toBe(200);
    expect(shape(replay.body)).toEqual(shape(first.body));
    const [incident, ...more] = await openOf(user);
    expect(more).toEqual([]);
    expect(incident?.sources).toEqual(['duress']);
    expect((await t.vigil.store.getTimer(d.id))?.duressPending).toBeUndefined();
    await eventually(
      async () => mod.named('sos.triggered').some((p) => (p.incident as { id: string }).id === incident?.id),
      'sos.triggered to moderators',
    );
    await t.vigil.sweeper.sweep();
    expect((await openOf(user)).map((i) => i.id)).toEqual([incident?.id]);
    expect((await t.api(t.token('mod', { admin: true }), 'POST', `/v1/admin/incidents/${incident?.id ?? ''}/resolve`)).status).toBe(200);
  });

  it('DURESS_TEXT_CONTACTS=false also when the duress check-in took over a timer the sweep had just expired and the sweep completes its escalation: nobody is texted', async () => {
    const quiet = await startTestVigil({ DURESS_TEXT_CONTACTS: 'false' }, { manualTicks: true });
    try {
      const store = quiet.vigil.store;
      const tok = quiet.token('took-over', { name: 'took-over' });
      expect((await quiet.api(tok, 'PUT', '/v1/me/contacts', { contacts })).status).toBe(200);
      expect((await quiet.api(tok, 'PUT', '/v1/me/duress', { pin: PIN })).status).toBe(200);
      const timer = (await quiet.api(tok, 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer as { id: string; expiresAt: string };
      await untilPast(timer.expiresAt);
      // a sweep claimed the timer (expired, escalation pending) and has not escalated it yet
      expect((await store.claimDueTimers(10, 1)).map((x) => x.id)).toEqual([timer.id]);
      // the duress check-in takes it over; the request dies before it marks the escalation done
      const real = store.markEscalated;
      Object.assign(store, { markEscalated: () => Promise.reject(new Error('injected: the replica died')) });
      try {
        expect((await quiet.api(tok, 'POST', `/v1/timers/${timer.id}/safe`, { pin: PIN })).status).toBe(500);
      } finally {
        Object.assign(store, { markEscalated: real });
      }
      expect((await store.getTimer(timer.id))?.escalation).toBe('pending');
      // the sweep completes the escalation: the duress incident it finds texts nobody
      expect((await quiet.vigil.sweeper.sweep()).escalated).toBe(1);
      await quiet.vigil.dispatcher.tick();
      const list = (await quiet.api(quiet.token('mod', { admin: true }), 'GET', '/v1/admin/incidents')).body.incidents as {
        id: string;
        sources: string[];
        deliveries: unknown[];
      }[];
      expect(list).toHaveLength(1);
      expect(list[0]).toMatchObject({ sources: ['duress'], deliveries: [] });
      expect(list[0]?.id.startsWith('drs_')).toBe(true);
      expect(await store.getTimer(timer.id)).toMatchObject({ escalation: 'done', incidentId: list[0]?.id });
    } finally {
      await quiet.stop();
    }
  });

  it('a PIN sent by someone who never set one is hashed and ignored: a genuine check-in', async () => {
    const tok = await person('no-pin');
    const timer = await arm(tok);
    const r = await t.api(tok, 'POST', `/v1/timers/${timer.id}/safe`, { pin: PIN });
    expect(r.status).toBe(200);
    expect(await openOf('no-pin')).toEqual([]);
  });

  it('invariant 3: a duress check-in racing the sweep of the same due timer opens exactly one incident (30 trials)', async () => {
    const trials = 30;
    const outcomes = { duressFirst: 0, sweepFirst: 0 };
    for (let n = 0; n < trials; n++) {
      const user = `race-${n}`;
      const tok = await person(user);
      expect((await t.api(tok, 'PUT', '/v1/me/duress', { pin: PIN })).status).toBe(200);
      const timer = await arm(tok, 1);
      await untilPast(timer.expiresAt);
      // the check-in spends a scrypt before its CAS: the sweep starts 0 to 150 ms later, so either may win
      const sweepLater = new Promise<void>((resolve) => setTimeout(resolve, (n % 6) * 30)).then(() => t.vigil.sweeper.sweep());
      const [answer] = await Promise.all([t.api(tok, 'POST', `/v1/timers/${timer.id}/safe`, { pin: PIN }), sweepLater]);
      // the sweep completes whatever it claimed, a second sweep repairs anything left pending
      await t.vigil.sweeper.sweep();
      if (answer.status === 200 && answer.body.timer.status === 'safe') outcomes.duressFirst++;
      else outcomes.sweepFirst++;
      const open = await openOf(user);
      expect(open, `trial ${n}: ${JSON.stringify(answer.body)}`).toHaveLength(1);
      expect(open[0]?.sources).toContain('duress');
      expect((await t.api(t.token('mod', { admin: true }), 'POST', `/v1/admin/incidents/${open[0]?.id ?? ''}/resolve`)).status).toBe(200);
    }
    process.stdout.write(
      `[sqlite] duress vs sweep, ${trials} trials: duress first ${outcomes.duressFirst}, sweep first ${outcomes.sweepFirst}\n`,
    );
  });
});
