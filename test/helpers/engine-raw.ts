/**
 * Socket.IO handshakes written by hand over raw TCP, as a flooding client would send them: a
 * WebSocket upgrade that then says nothing (or what the test writes), a long-polling
 * handshake, and a plain HTTP request on a connection of its own. No client library decides
 * anything (reconnects, pings): each connection does exactly what the test says.
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface RawWebSocket {
  socket: Socket;
  /** the status of the answer to the upgrade (101 when accepted) */
  status: Promise<number>;
  /** the head and body of a refusal (empty once upgraded) */
  refusal: Promise<string>;
  /** text frames received, in order (Engine.IO packets: `0{…}` open, `44{…}` a connect error, …) */
  frames: string[];
  /** resolves when the server has closed the connection (or it failed) */
  closed: Promise<void>;
  isClosed(): boolean;
  /** writes one masked text frame (a client's frames are masked) */
  send(text: string): void;
  destroy(): void;
}

/** Parses server frames (unmasked) from `buf`; returns the bytes not yet a whole frame. */
function readFrames(buf: Buffer, out: string[]): Buffer {
  for (;;) {
    if (buf.length < 2) return buf;
    const opcode = (buf[0] ?? 0) & 0x0f;
    let len = (buf[1] ?? 0) & 0x7f;
    let at = 2;
    if (len === 126) {
      if (buf.length < 4) return buf;
      len = buf.readUInt16BE(2);
      at = 4;
    } else if (len === 127) {
      if (buf.length < 10) return buf;
      len = Number(buf.readBigUInt64BE(2));
      at = 10;
    }
    if (buf.length < at + len) return buf;
    if (opcode === 1) out.push(buf.subarray(at, at + len).toString('utf8'));
    buf = buf.subarray(at + len);
  }
}

function maskedText(text: string): Buffer {
  const payload = Buffer.from(text, 'utf8');
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x81, 0x80 | n]) : Buffer.alloc(4);
  if (n >= 126) {
    if (n > 0xffff) throw new Error('maskedText: frames over 64 KiB are not needed here');
    head[0] = 0x81;
    head[1] = 0x80 | 126;
    head.writeUInt16BE(n, 2);
  }
  const mask = Buffer.from([1, 2, 3, 4]);
  const body = Buffer.from(payload.map((b, i) => b ^ (mask[i % 4] ?? 0)));
  return Buffer.concat([head, mask, body]);
}

/** An Engine.IO WebSocket handshake (no session yet: a new connection) that sends nothing after it. */
export function rawWebSocket(port: number): RawWebSocket {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const frames: string[] = [];
  let head: Buffer = Buffer.alloc(0);
  let rest: Buffer = Buffer.alloc(0);
  let upgraded = false;
  let closed = false;
  let setStatus: (s: number) => void = () => undefined;
  let setRefusal: (s: string) => void = () => undefined;
  const status = new Promise<number>((r) => (setStatus = r));
  const refusal = new Promise<string>((r) => (setRefusal = r));
  socket.on('data', (chunk: Buffer) => {
    if (upgraded) {
      rest = readFrames(Buffer.concat([rest, chunk]), frames);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) return;
    const code = Number(/^HTTP\/1\.1 (\d{3})/.exec(head.toString('latin1'))?.[1] ?? 0);
    setStatus(code);
    if (code === 101) {
      upgraded = true;
      setRefusal('');
      rest = readFrames(head.subarray(end + 4), frames);
    }
  });
  const done = new Promise<void>((resolve) => {
    socket.on('close', () => {
      closed = true;
      setStatus(0);
      setRefusal(upgraded ? '' : head.toString('utf8'));
      resolve();
    });
  });
  socket.write(
    'GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  );
  return {
    socket,
    status,
    refusal,
    frames,
    closed: done,
    isClosed: () => closed,
    send: (text) => void socket.write(maskedText(text)),
    destroy: () => socket.destroy(),
  };
}

export interface PlainAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request on a connection of its own, closed after the answer (status 0: the connection failed). */
export function plainRequest(port: number, method: string, path: string, headers: Record<string, string> = {}): Promise<PlainAnswer> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, method, path, agent: false, headers: { connection: 'close', ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', () => resolve({ status: 0, headers: {}, body }));
    });
    req.on('error', () => resolve({ status: 0, headers: {}, body: '' }));
    req.end();
  });
}

/** An Engine.IO long-polling handshake: a new session (its open packet `0{"sid":…}` in the body when 200). */
export const pollingHandshake = (port: number) => plainRequest(port, 'GET', '/socket.io/?EIO=4&transport=polling');

/** The session id of a long-polling handshake's answer. */
export function sidOf(answer: PlainAnswer): string {
  const open = JSON.parse(answer.body.slice(1)) as { sid: string };
  return open.sid;
}
