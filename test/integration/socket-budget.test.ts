/**
 * Socket.IO inside the budgets (docs/security.md, "Sockets"): a flood of token-less handshakes
 * from one address never keeps a check-in from being answered (threat: a false SOS), because
 *   - the sockets never hold the connections kept for plain HTTP (HTTP_RESERVED_CONNECTIONS);
 *   - every handshake spends the budget of its address (RATE_LIMIT_PER_IP);
 *   - a connection that has not authenticated within SOCKETS_AUTH_TIMEOUT_MS is closed, and a
 *     failed token check closes it at once;
 *   - a message larger than SOCKETS_MAX_MESSAGE_BYTES closes the connection unread.
 * Handshakes are written by hand over raw TCP (test/helpers/engine-raw.ts), as a flooder would.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { io as ioClient, type Socket as ClientSocket } from 'socket.io-client';
import { plainRequest, pollingHandshake, rawWebSocket, sidOf, type RawWebSocket } from '../helpers/engine-raw.js';
import { withinMs } from '../helpers/deadline.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';

const opened: RawWebSocket[] = [];
const clients: ClientSocket[] = [];
afterEach(() => {
  for (const s of opened.splice(0)) s.destroy();
  for (const c of clients.splice(0)) c.close();
});

async function refusals(v: TestVigil, reason: string): Promise<number> {
  const m = await v.vigil.metrics.socketRefusals.get();
  return m.values.find((x) => x.labels.reason === reason)?.value ?? 0;
}

/** Arms one timer for `sub` (over the test's keep-alive client, before any flood). */
async function arm(v: TestVigil, sub: string): Promise<{ token: string; id: string }> {
  const token = v.token(sub);
  const r = await v.api(token, 'POST', '/v1/timers', { durationSeconds: 3600 });
  expect(r.status).toBe(201);
  return { token, id: (r.body as { timer: { id: string } }).timer.id };
}

/** "I'm safe" on a connection of its own, as a phone that just woke up would send it. */
const checkIn = (v: TestVigil, t: { token: string; id: string }) =>
  plainRequest(v.vigil.port, 'POST', `/v1/timers/${t.id}/safe`, { authorization: `Bearer ${t.token}` });

function authenticated(url: string, token: string, transport: 'websocket' | 'polling' = 'websocket'): Promise<ClientSocket> {
  const c = ioClient(url, { auth: { token }, transports: [transport], reconnection: false, forceNew: true });
  clients.push(c);
  return withinMs(
    new Promise<ClientSocket>((resolve, reject) => {
      c.once('ready', () => resolve(c));
      c.once('connect_error', reject);
    }),
    15_000,
    'an authenticated connection',
  );
}

describe('HTTP_RESERVED_CONNECTIONS: a handshake flood from one address', () => {
  const CAP = 24;
  const RESERVED = 8;
  let v: TestVigil;
  beforeAll(async () => {
    // a generous address budget and a long authentication timeout: only the reserve protects here
    v = await startTestVigil(
      { HTTP_MAX_CONNECTIONS: String(CAP), HTTP_RESERVED_CONNECTIONS: String(RESERVED), SOCKETS_AUTH_TIMEOUT_MS: '60000' },
      { manualTicks: true },
    );
  });
  afterAll(async () => {
    await v?.stop();
  });

  it('never takes the connections check-ins need: every check-in is answered 200 while idle sockets and polling sessions flood', async () => {
    const timers = [];
    for (let i = 0; i < 12; i++) timers.push(await arm(v, `checker-${i}`));

    let flooding = true;
    let attempts = 0;
    const held: RawWebSocket[] = [];
    const openHeld = () => held.filter((w) => !w.isClosed()).length;
    // four openers, each with one handshake in flight at a time: idle WebSockets kept open,
    // and long-polling handshakes that leave sessions behind
    const opener = async (kind: 'websocket' | 'polling') => {
      while (flooding) {
        if (kind === 'polling') {
          await pollingHandshake(v.vigil.port);
          continue;
        }
        const ws = rawWebSocket(v.vigil.port);
        opened.push(ws);
        attempts++;
        if ((await ws.status) === 101) held.push(ws);
        else await ws.closed;
      }
    };
    const flood = Promise.all([opener('websocket'), opener('websocket'), opener('websocket'), opener('polling')]);
    try {
      // the flood holds the sockets' share, and goes on for 20 more WebSockets
      await eventually(async () => openHeld() >= CAP - RESERVED, 'the sockets holding their share');
      const after = attempts + 20;
      await eventually(async () => attempts >= after, '20 more handshakes');
      const answers = [];
      for (const t of timers) answers.push((await checkIn(v, t)).status);
      expect(answers).toEqual(timers.map(() => 200));
      expect(openHeld()).toBeLessThanOrEqual(CAP - RESERVED);
      expect(await refusals(v, 'full')).toBeGreaterThanOrEqual(20);
    } finally {
      flooding = false;
      await flood;
    }
    for (const t of timers) expect((await v.vigil.store.getTimer(t.id))?.status).toBe('safe');
  });

  it('answers a refused handshake with 503 sockets_full in the JSON error shape, and closes it', async () => {
    // idle WebSockets, one at a time, until the share is full
    let ws: RawWebSocket;
    for (let i = 0; ; i++) {
      expect(i).toBeLessThan(CAP);
      ws = rawWebSocket(v.vigil.port);
      opened.push(ws);
      if ((await ws.status) !== 101) break;
    }
    expect(await ws.status).toBe(503);
    await withinMs(ws.closed, 15_000, 'closing the refused upgrade');
    const answer = await ws.refusal;
    expect(JSON.parse(answer.split('\r\n\r\n')[1] ?? '')).toEqual({ error: { code: 'sockets_full', message: expect.any(String) } });
    // a long-polling handshake too, in the JSON error shape
    const polling = await pollingHandshake(v.vigil.port);
    expect(polling.status).toBe(503);
    expect(JSON.parse(polling.body)).toMatchObject({ error: { code: 'sockets_full' } });
    expect((await plainRequest(v.vigil.port, 'GET', '/livez')).status).toBe(200);
  });
});

describe('RATE_LIMIT_PER_IP: every handshake spends the budget of its address', () => {
  const BUDGET = 5;
  let v: TestVigil;
  beforeAll(async () => {
    v = await startTestVigil(
      { RATE_LIMIT_PER_IP: String(BUDGET), RATE_LIMIT_WINDOW_MS: '600000', RATE_LIMIT_HOLD_MS: '0' },
      { manualTicks: true },
    );
  });
  afterAll(async () => {
    await v?.stop();
  });

  it('refuses handshakes over the budget with 429 rate_limited and Retry-After; check-ins with a token still pass', async () => {
    const t = await arm(v, 'budget-person');
    for (let i = 0; i < BUDGET; i++) expect((await pollingHandshake(v.vigil.port)).status).toBe(200);

    const polling = await pollingHandshake(v.vigil.port);
    expect(polling.status).toBe(429);
    expect(Number(polling.headers['retry-after'])).toBeGreaterThan(0);
    expect(JSON.parse(polling.body)).toEqual({ error: { code: 'rate_limited', message: expect.any(String), details: { budget: 'ip' } } });

    const ws = rawWebSocket(v.vigil.port);
    opened.push(ws);
    expect(await ws.status).toBe(429);
    await withinMs(ws.closed, 15_000, 'closing the refused upgrade');

    // one budget: the address's requests without a token are refused too
    expect((await plainRequest(v.vigil.port, 'GET', '/openapi.json')).status).toBe(429);
    // a check-in carries a token: its own budget
    expect((await checkIn(v, t)).status).toBe(200);
    expect(await refusals(v, 'rate_limited')).toBeGreaterThanOrEqual(2);
  });
});

describe('SOCKETS_AUTH_TIMEOUT_MS: connections that do not authenticate', () => {
  let v: TestVigil;
  beforeAll(async () => {
    v = await startTestVigil({ SOCKETS_AUTH_TIMEOUT_MS: '500' }, { manualTicks: true });
  });
  afterAll(async () => {
    await v?.stop();
  });

  it('closes an idle token-less WebSocket after the timeout (Socket.IO would wait 45 s), and keeps an authenticated one', async () => {
    const ws = rawWebSocket(v.vigil.port);
    opened.push(ws);
    const person = await authenticated(v.url, v.token('stays'));
    expect(await ws.status).toBe(101);
    await withinMs(ws.closed, 15_000, 'closing the unauthenticated WebSocket');
    expect(person.connected).toBe(true);
  });

  it('ends a long-polling session that never authenticates', async () => {
    const open = await pollingHandshake(v.vigil.port);
    expect(open.status).toBe(200);
    const sid = sidOf(open);
    // the pending poll is answered with a close packet, or the session is already gone
    const poll = await withinMs(
      plainRequest(v.vigil.port, 'GET', `/socket.io/?EIO=4&transport=polling&sid=${sid}`),
      15_000,
      'ending the session',
    );
    expect(poll.status === 400 || poll.body.includes('1')).toBe(true);
    const after = await plainRequest(v.vigil.port, 'GET', `/socket.io/?EIO=4&transport=polling&sid=${sid}`);
    expect(after.status).toBe(400);
  });
});

describe('a failed token check', () => {
  let v: TestVigil;
  beforeAll(async () => {
    v = await startTestVigil({ SOCKETS_AUTH_TIMEOUT_MS: '60000' }, { manualTicks: true });
  });
  afterAll(async () => {
    await v?.stop();
  });

  it('is answered with a connect error and closes the connection at once (one token check per connection)', async () => {
    const ws = rawWebSocket(v.vigil.port);
    opened.push(ws);
    expect(await ws.status).toBe(101);
    await eventually(async () => ws.frames.some((f) => f.startsWith('0{')), 'the open packet');
    ws.send('40{"token":"not-a-token"}');
    await withinMs(ws.closed, 15_000, 'closing after the failed token check');
    expect(ws.frames.find((f) => f.startsWith('44'))).toMatch(/unauthorized/);
    expect(await refusals(v, 'unauthorized')).toBe(1);
  });
});

describe('SOCKETS_MAX_MESSAGE_BYTES: oversized messages', () => {
  let v: TestVigil;
  beforeAll(async () => {
    v = await startTestVigil({}, { manualTicks: true });
  });
  afterAll(async () => {
    await v?.stop();
  });

  it.each(['websocket', 'polling'] as const)(
    'closes a %s connection that sends a message over the default 8 KiB unread',
    async (transport) => {
      const c = await authenticated(v.url, v.token(`big-${transport}`), transport);
      const small = await c.timeout(10_000).emitWithAck('location.fix', { timerId: 'none', lat: 1, lng: 1 });
      expect(small).toMatchObject({ ok: false, error: { code: 'timer_not_found' } });
      const gone = new Promise<string>((resolve) => c.once('disconnect', resolve));
      const answered = new Promise<string>((resolve) =>
        c.emit('location.fix', { timerId: 'x'.repeat(20_000), lat: 1, lng: 1 }, () => resolve('read and answered')),
      );
      expect(await withinMs(Promise.race([gone, answered]), 15_000, 'closing the connection')).toMatch(/transport (close|error)/);
    },
  );
});
