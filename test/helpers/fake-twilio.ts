/**
 * A fake Twilio REST API on 127.0.0.1 (port 0) for the real `twilio` client, HTTP basic auth:
 * `POST /2010-04-01/Accounts/:sid/Messages.json` (form-encoded) creates a message, and
 * `GET` on the same path lists them with Twilio's filters (`To`, `From`, `DateSent`,
 * `DateSent<`, `DateSent>`, day granularity, inclusive) and paging (`PageSize`, `Page`,
 * `messages`, `next_page_uri`, …), newest first.
 *
 * Like Twilio, it has no idempotency: every valid create is a new message, whatever the
 * headers say. `accepted` is every message it would have sent. Faults on demand, for
 * creates and lists alike: `failNext`, `failRatio` (500, 429, or a request left hanging),
 * `down` (503 or reset), `slow` (accept, answer late), `loseAnswers` (accept, then reset
 * the connection), `invalidNumbers`.
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
  authorized: boolean;
  /** the status answered; 0 for a reset or a request left hanging */
  status: number;
}

export interface TwilioLookupRecord {
  /** the query string's parameters (`To`, `From`, `DateSent>`, `PageSize`, …) */
  query: Record<string, string>;
  authorized: boolean;
  /** the status answered; 0 for a reset or a request left hanging */
  status: number;
  /** how many messages the page carried */
  returned: number;
}

export interface FakeMessage {
  sid: string;
  to: string;
  from?: string;
  messagingServiceSid?: string;
  body: string;
  dateCreated: Date;
  /** set at acceptance: the fake "sends" at once */
  dateSent: Date;
  status: 'queued' | 'accepted';
}

const MESSAGES_PATH = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/;
const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 1000;

export class FakeTwilio {
  /** every create request, in arrival order */
  readonly requests: TwilioRequestRecord[] = [];
  /** every list request, in arrival order */
  readonly lookups: TwilioLookupRecord[] = [];
  /** every message accepted (what Twilio would send), duplicates included */
  readonly accepted: FakeMessage[] = [];
  readonly invalidNumbers = new Set<string>();
  /** numbers that replied STOP to our sender: Twilio refuses every text to them (error 21610) */
  readonly unsubscribedNumbers = new Set<string>();

  private failQueue: number[] = [];
  private ratio: { p: number; kinds: FaultKind[]; random: () => number } | undefined;
  private downMode: DownMode | undefined;
  private delayMs = 0;
  private answersToLose = 0;
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

  /** messages accepted for `to` (the fake cannot know delivery keys; one delivery per number in a test) */
  acceptedFor(to: string): FakeMessage[] {
    return this.accepted.filter((m) => m.to === to);
  }

  /** the next `n` requests (create or list) answer `status` (after recording them) */
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

  /** answer `ms` later; a create is accepted first, as when a response is lost on the way */
  slow(ms: number): void {
    this.delayMs = ms;
  }

  /** the next `n` creates are accepted, then the connection is reset instead of answered */
  loseAnswers(n: number): void {
    this.answersToLose += n;
  }

  close(): Promise<void> {
    return this.http.close();
  }

  private handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const match = MESSAGES_PATH.exec(url.pathname);
    if (!match?.[1] || (req.method !== 'POST' && req.method !== 'GET')) {
      sendJson(res, 404, twilioError(20404, 'The requested resource was not found', 404));
      return;
    }
    const authorized = this.authorized(req, match[1]);
    if (req.method === 'GET') {
      const record: TwilioLookupRecord = { query: Object.fromEntries(url.searchParams), authorized, status: 0, returned: 0 };
      this.lookups.push(record);
      const answer = (status: number, payload: object): void => {
        record.status = status;
        this.reply(res, status, payload);
      };
      if (this.fault(req, answer)) return;
      if (!authorized) return answer(401, twilioError(20003, 'Authenticate', 401));
      const page = this.list(match[1], url.searchParams);
      if ('error' in page) return answer(400, page.error);
      record.returned = page.returned;
      return answer(200, page.payload);
    }

    const form = new URLSearchParams(raw);
    const record: TwilioRequestRecord = {
      accountSid: match[1],
      authorized,
      status: 0,
      ...optional('to', form.get('To')),
      ...optional('from', form.get('From')),
      ...optional('messagingServiceSid', form.get('MessagingServiceSid')),
      ...optional('body', form.get('Body')),
      ...optional('statusCallback', form.get('StatusCallback')),
    };
    this.requests.push(record);
    const answer = (status: number, payload: object): void => {
      record.status = status;
      this.reply(res, status, payload);
    };
    if (this.fault(req, answer)) return;
    if (!record.authorized) return answer(401, twilioError(20003, 'Authenticate', 401));

    const to = record.to;
    if (to === undefined) return answer(400, twilioError(21604, "A 'To' phone number is required.", 400));
    if (this.invalidNumbers.has(to) || !/^\+\d{8,15}$/.test(to)) {
      return answer(400, twilioError(21211, "The 'To' number is not a valid phone number.", 400));
    }
    if (this.unsubscribedNumbers.has(to)) return answer(400, twilioError(21610, 'Attempt to send to unsubscribed recipient', 400));
    if (record.from === undefined && record.messagingServiceSid === undefined) {
      return answer(400, twilioError(21603, "A 'From' phone number is required.", 400));
    }
    if (record.body === undefined || record.body === '') {
      return answer(400, twilioError(21602, 'Message body is required.', 400));
    }

    const now = new Date();
    const message: FakeMessage = {
      sid: `SM${hex(16)}`,
      to,
      body: record.body,
      dateCreated: now,
      dateSent: now,
      status: record.from === undefined ? 'accepted' : 'queued',
      ...optional('from', record.from),
      ...optional('messagingServiceSid', record.messagingServiceSid),
    };
    this.accepted.push(message);
    if (this.answersToLose > 0) {
      this.answersToLose -= 1;
      return void req.socket.destroy(); // accepted; the client sees a reset
    }
    answer(201, this.messageJson(message));
  }

  /** answers a forced or random fault and says so; false: no fault this time */
  private fault(req: IncomingMessage, answer: (status: number, payload: object) => void): boolean {
    if (this.downMode === 'reset') {
      req.socket.destroy();
      return true;
    }
    if (this.downMode === 'unavailable') {
      answer(503, twilioError(20503, 'Service Unavailable', 503));
      return true;
    }
    const forced = this.failQueue.shift();
    if (forced !== undefined) {
      answer(forced, twilioError(20000 + forced, `Forced ${forced}`, forced));
      return true;
    }
    if (this.ratio && this.ratio.random() < this.ratio.p) {
      const kind = this.ratio.kinds[Math.floor(this.ratio.random() * this.ratio.kinds.length)] ?? '500';
      if (kind === 'timeout') return true; // hold the request until the client gives up or close()
      if (kind === '429') answer(429, twilioError(20429, 'Too Many Requests', 429));
      else answer(500, twilioError(20500, 'Internal Server Error', 500));
      return true;
    }
    return false;
  }

  private reply(res: ServerResponse, status: number, payload: object): void {
    if (this.delayMs > 0) this.http.later(this.delayMs, () => sendJson(res, status, payload));
    else sendJson(res, status, payload);
  }

  /** Twilio's Messages list: filters, newest first, `Page`/`PageSize` paging. */
  private list(accountSid: string, q: URLSearchParams): { payload: object; returned: number } | { error: object } {
    const day = (name: string): string | undefined | null => {
      const v = q.get(name);
      if (v === null) return undefined;
      return /^\d{4}-\d{2}-\d{2}/.test(v) ? v.slice(0, 10) : null;
    };
    const on = day('DateSent');
    const before = day('DateSent<');
    const after = day('DateSent>');
    if (on === null || before === null || after === null) return { error: twilioError(20001, 'Invalid DateSent', 400) };
    const pageSize = Math.min(MAX_PAGE_SIZE, Math.max(1, Number(q.get('PageSize') ?? DEFAULT_PAGE_SIZE) || DEFAULT_PAGE_SIZE));
    const page = Math.max(0, Number(q.get('Page') ?? 0) || 0);
    const to = q.get('To');
    const from = q.get('From');
    const matching = this.accepted
      .filter((m) => {
        const sentDay = m.dateSent.toISOString().slice(0, 10);
        return (
          (to === null || m.to === to) &&
          (from === null || m.from === from) &&
          (on === undefined || sentDay === on) &&
          (before === undefined || sentDay <= before) &&
          (after === undefined || sentDay >= after)
        );
      })
      .map((m, i) => ({ m, i }))
      .sort((a, b) => b.m.dateCreated.getTime() - a.m.dateCreated.getTime() || b.i - a.i)
      .map(({ m }) => m);
    const start = page * pageSize;
    const slice = matching.slice(start, start + pageSize);
    const path = `/2010-04-01/Accounts/${accountSid}/Messages.json`;
    const pageUri = (p: number): string => {
      const params = new URLSearchParams(q);
      params.set('PageSize', String(pageSize));
      params.set('Page', String(p));
      params.delete('PageToken');
      if (p > 0) params.set('PageToken', `PA${slice[0]?.sid ?? ''}`);
      return `${path}?${params.toString()}`;
    };
    const payload = {
      end: start + Math.max(0, slice.length - 1),
      first_page_uri: pageUri(0),
      messages: slice.map((m) => this.messageJson(m)),
      next_page_uri: start + pageSize < matching.length ? pageUri(page + 1) : null,
      page,
      page_size: pageSize,
      previous_page_uri: page > 0 ? pageUri(page - 1) : null,
      start,
      uri: pageUri(page),
    };
    return { payload, returned: slice.length };
  }

  private authorized(req: IncomingMessage, pathSid: string): boolean {
    const expected = `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`;
    return pathSid === this.accountSid && req.headers.authorization === expected;
  }

  private messageJson(m: FakeMessage): object {
    return {
      account_sid: this.accountSid,
      api_version: '2010-04-01',
      body: m.body,
      date_created: m.dateCreated.toUTCString(),
      date_sent: m.dateSent.toUTCString(),
      date_updated: m.dateCreated.toUTCString(),
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
      status: m.status,
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
