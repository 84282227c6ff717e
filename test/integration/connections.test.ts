/**
 * Connection caps: a client that sends its headers or body too slowly is answered and cut
 * off; past HTTP_MAX_CONNECTIONS new connections are closed; oversized headers are 431;
 * all of it in the JSON error shape. Deadlines are generous: nothing here measures speed.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';

let v: TestVigil;
let port: number;

beforeAll(async () => {
  v = await startTestVigil(
    { HTTP_HEADERS_TIMEOUT_MS: '400', HTTP_REQUEST_TIMEOUT_MS: '800', HTTP_KEEP_ALIVE_TIMEOUT_MS: '500', HTTP_MAX_CONNECTIONS: '8' },
    { manualTicks: true },
  );
  port = v.vigil.port;
});
afterAll(async () => {
  await v?.stop();
});

/** Open a raw TCP connection, write `chunks`, and collect everything until the server closes it. */
function rawConnection(first?: string): { socket: Socket; closed: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  let got = '';
  socket.on('data', (c: Buffer) => (got += c.toString('utf8')));
  const closed = new Promise<string>((resolve) => {
    socket.on('close', () => resolve(got));
    socket.on('error', () => undefined);
  });
  if (first) socket.write(first);
  return { socket, closed };
}

async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (t = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms))),
    ]);
  } finally {
    clearTimeout(t);
  }
}

describe('slow clients', () => {
  it('answers 408 in the JSON error shape and closes a connection whose headers never finish', async () => {
    const { closed } = rawConnection('GET /v1/timers HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const answer = await within(closed, 15_000, 'closing a connection with unfinished headers');
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(JSON.parse(answer.split('\r\n\r\n')[1] ?? '')).toEqual({ error: { code: 'request_timeout', message: expect.any(String) } });
  });

  it('closes a connection whose body does not arrive within HTTP_REQUEST_TIMEOUT_MS', async () => {
    const { socket, closed } = rawConnection(
      `POST /v1/timers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${v.token('slow-body')}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"dura`,
    );
    // trickle a byte now and then: never enough to finish
    const drip = setInterval(() => socket.writable && socket.write(' '), 1000);
    try {
      const answer = await within(closed, 15_000, 'closing a connection with an unfinished body');
      expect(answer).not.toMatch(/^HTTP\/1\.1 201/);
      expect(await v.vigil.store.listTimers('slow-body')).toEqual([]);
    } finally {
      clearInterval(drip);
    }
  });

  it('closes an idle keep-alive connection', async () => {
    const { closed } = rawConnection('GET /livez HTTP/1.1\r\nHost: x\r\n\r\n');
    const answer = await within(closed, 15_000, 'closing an idle keep-alive connection');
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
  });

  it('answers oversized headers with 431 in the JSON error shape', async () => {
    const { closed } = rawConnection(`GET /v1/timers HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const answer = await within(closed, 15_000, 'refusing oversized headers');
    expect(answer).toMatch(/^HTTP\/1\.1 431/);
    expect(JSON.parse(answer.split('\r\n\r\n')[1] ?? '')).toMatchObject({ error: { code: 'headers_too_large' } });
  });
});

describe('HTTP_MAX_CONNECTIONS', () => {
  it('closes connections past the cap at once, and serves again once they are gone', async () => {
    const held = Array.from({ length: 8 }, () => rawConnection());
    await Promise.all(held.map((h) => new Promise((r) => h.socket.once('connect', r))));
    try {
      // the ninth is accepted by the kernel and closed by Node without an answer
      const extra = rawConnection('GET /livez HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(await within(extra.closed, 15_000, 'closing a connection past the cap')).toBe('');
    } finally {
      for (const h of held) h.socket.destroy();
    }
    // the held ones are gone: served again (Node counts them down as they close)
    const until = Date.now() + 15_000;
    for (;;) {
      const ok = await fetch(`${v.url}/livez`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      if (Date.now() > until) throw new Error('never served again after the held connections closed');
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});
