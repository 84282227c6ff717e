/**
 * A fake Twilio REST API on 127.0.0.1 (port 0) for the real `twilio` client:
 * `POST /2010-04-01/Accounts/:sid/Messages.json`, form-encoded, HTTP basic auth.
 *
 * It answers like Twilio (201 + message JSON; errors as `{ code, message, more_info,
 * status }`) and dedupes on `I-Twilio-Idempotency-Token`: a token already accepted gets
 * the same message back and is not counted again. Faults on demand: `failNext`,
 * `failRatio`, `down`, `slow`, `invalidNumbers`.
 *
 * The small HTTP helpers at the bottom are shared with fake-fast2sms.ts.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type FaultKind = '500' | 'timeout' | '429';
export type DownMode = 'unavailable' | 'reset';

export interface TwilioRequestRecord {
  accountSid: string;
  to?: string;
  from?: string;
  messagingServiceSid?: string;
  body?: string;
  statusCallback?: string;
  idempotencyToken?: string;
  authorized: boolean;
  /** the status answered; 0 for a reset or a request left hanging */
  status: number;
}

export interface FakeMessage {
  sid: string;
  to: string;
  from?: string;
  messagingServiceSid?: string;
  body: string;
  idempotencyToken?: string;
}

const MESSAGES_PATH = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/;

export class FakeTwilio {
  readonly requests: TwilioRequestRecord[] = [];
  /** every message accepted once (a deduped replay adds nothing) */
  readonly accepted: FakeMessage[] = [];
  readonly byToken = new Map<string, FakeMessage>();
  readonly invalidNumbers = new Set<string>();

  private failQueue: number[] = [];
  private ratio: { p: number; kinds: FaultKind[]; random: () => number } | undefined;
  private downMode: DownMode | undefined;
  private delayMs = 0;
  private readonly http: HttpFake;

  private constructor(
    readonly accountSid: string,
    readonly authToken: string,
  ) {
    this.http = new HttpFake((req, res, body) => this.handle(req, res, body));
  }

  static async start(opts: { accountSid?: string; authToken?: string } = {}): Promise<FakeTwilio> {
    const fake = new FakeTwilio(opts.accountSid ?? `AC${hex(16)}`, opts.authToken ?? hex(16));
    await fake.http.listen();
    return fake;
  }

  /** `http://127.0.0.1:<port>` */
  get url(): string {
    return this.http.url;
  }

  /** the next `n` requests answer `status` (after recording them) */
  failNext(n: number, status: number): void {
    for (let i = 0; i < n; i++) this.failQueue.push(status);
  }

  /** each request fails with probability `p`, with a kind drawn from `kinds`; p = 0 turns it off */
  failRatio(p: number, kinds: FaultKind[], random: () => number = Math.random): void {
    this.ratio = p > 0 && kinds.length > 0 ? { p, kinds, random } : undefined;
  }

  /** everything answers 503, or every connection is reset (`mode: 'reset'`) */
  down(on: boolean, mode: DownMode = 'unavailable'): void {
    this.downMode = on ? mode : undefined;
  }

  /** answer `ms` later; the message is accepted first, as when a response is lost on the way */
  slow(ms: number): void {
    this.delayMs = ms;
  }

  close(): Promise<void> {
    return this.http.close();
  }

  private handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
    const match = MESSAGES_PATH.exec(new URL(req.url ?? '/', 'http://x').pathname);
    if (req.method !== 'POST' || !match?.[1]) {
      sendJson(res, 404, twilioError(20404, 'The requested resource was not found', 404));
      return;
    }
    const form = new URLSearchParams(raw);
    const token = header(req, 'i-twilio-idempotency-token');
    const record: TwilioRequestRecord = {
      accountSid: match[1],
      authorized: this.authorized(req, match[1]),
      status: 0,
      ...optional('to', form.get('To')),
      ...optional('from', form.get('From')),
      ...optional('messagingServiceSid', form.get('MessagingServiceSid')),
      ...optional('body', form.get('Body')),
      ...optional('statusCallback', form.get('StatusCallback')),
      ...optional('idempotencyToken', token),
    };
    this.requests.push(record);
    const answer = (status: number, payload: object): void => {
      record.status = status;
      sendJson(res, status, payload);
    };

    if (this.downMode === 'reset') return void req.socket.destroy();
    if (this.downMode === 'unavailable') return answer(503, twilioError(20503, 'Service Unavailable', 503));
    const forced = this.failQueue.shift();
    if (forced !== undefined) return answer(forced, twilioError(20000 + forced, `Forced ${forced}`, forced));
    if (this.ratio && this.ratio.random() < this.ratio.p) {
      const kind = this.ratio.kinds[Math.floor(this.ratio.random() * this.ratio.kinds.length)] ?? '500';
      if (kind === 'timeout') return; // hold the request until the client gives up or close()
      if (kind === '429') return answer(429, twilioError(20429, 'Too Many Requests', 429));
      return answer(500, twilioError(20500, 'Internal Server Error', 500));
    }
    if (!record.authorized) return answer(401, twilioError(20003, 'Authenticate', 401));

    const to = record.to;
    if (to === undefined) return answer(400, twilioError(21604, "A 'To' phone number is required.", 400));
    if (this.invalidNumbers.has(to) || !/^\+\d{8,15}$/.test(to)) {
      return answer(400, twilioError(21211, "The 'To' number is not a valid phone number.", 400));
    }
    if (record.from === undefined && record.messagingServiceSid === undefined) {
      return answer(400, twilioError(21603, "A 'From' phone number is required.", 400));
    }
    if (record.body === undefined || record.body === '') {
      return answer(400, twilioError(21602, 'Message body is required.', 400));
    }

    let message = token === undefined ? undefined : this.byToken.get(token);
    if (!message) {
      message = {
        sid: `SM${hex(16)}`,
        to,
        body: record.body,
        ...optional('from', record.from),
        ...optional('messagingServiceSid', record.messagingServiceSid),
        ...optional('idempotencyToken', token),
      };
      this.accepted.push(message);
      if (token !== undefined) this.byToken.set(token, message);
    }
    const payload = this.messageJson(message);
    if (this.delayMs > 0) this.http.later(this.delayMs, () => answer(201, payload));
    else answer(201, payload);
  }

  private authorized(req: IncomingMessage, pathSid: string): boolean {
    const expected = `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`;
    return pathSid === this.accountSid && req.headers.authorization === expected;
  }

  private messageJson(m: FakeMessage): object {
    const now = new Date().toUTCString();
    return {
      account_sid: this.accountSid,
      api_version: '2010-04-01',
      body: m.body,
      date_created: now,
      date_sent: null,
      date_updated: now,
      direction: 'outbound-api',
      error_code: null,
      error_message: null,
      from: m.from ?? null,
      messaging_service_sid: m.messagingServiceSid ?? null,
      num_media: '0',
      num_segments: '1',
      price: null,
      price_unit: 'USD',
      sid: m.sid,
      status: m.from === undefined ? 'accepted' : 'queued',
      subresource_uris: { media: `/2010-04-01/Accounts/${this.accountSid}/Messages/${m.sid}/Media.json` },
      to: m.to,
      uri: `/2010-04-01/Accounts/${this.accountSid}/Messages/${m.sid}.json`,
    };
  }
}

const twilioError = (code: number, message: string, status: number): object => ({
  code,
  message,
  more_info: `https://www.twilio.com/docs/errors/${code}`,
  status,
});

// ---- shared HTTP plumbing for the fakes ----

export const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

/** `{ [k]: v }` when v is a string, `{}` otherwise (for exactOptional-friendly records) */
export function optional<K extends string>(k: K, v: string | null | undefined): { [P in K]?: string } {
  return (typeof v === 'string' ? { [k]: v } : {}) as { [P in K]?: string };
}

export function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function sendJson(res: ServerResponse, status: number, payload: object): void {
  if (res.destroyed || res.writableEnded) return;
  const text = JSON.stringify(payload);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A node:http server on 127.0.0.1:0 that reads whole bodies and closes without leftovers. */
export class HttpFake {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private port = 0;
  private closed = false;

  constructor(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => handler(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => {
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  /** run `fn` after `ms` unless the fake is closed first */
  later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      for (const s of this.sockets) s.destroy();
    });
  }
}
