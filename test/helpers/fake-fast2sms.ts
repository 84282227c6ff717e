/**
 * A fake Fast2SMS bulk API on 127.0.0.1 (port 0): `POST /dev/bulkV2`, JSON body,
 * `authorization: <apiKey>`. Answers like Fast2SMS: 200 `{ return: true, request_id,
 * message: [...] }`, refusals as 400/401 `{ return: false, status_code, message }`.
 * Like the real service it does not dedupe: every accepted request is a new message.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpFake, hex, header, sendJson, type DownMode } from './fake-twilio.js';

export interface Fast2SmsRequestRecord {
  route?: unknown;
  message?: unknown;
  numbers?: unknown;
  flash?: unknown;
  idempotencyKey?: string;
  authorized: boolean;
  /** the status answered; 0 for a reset or a request left hanging */
  status: number;
}

export interface Fast2SmsMessage {
  requestId: string;
  numbers: string[];
  message: string;
  idempotencyKey?: string;
}

export class FakeFast2Sms {
  readonly requests: Fast2SmsRequestRecord[] = [];
  readonly accepted: Fast2SmsMessage[] = [];
  /** ten-digit numbers answered with status_code 411 */
  readonly invalidNumbers = new Set<string>();

  private failQueue: number[] = [];
  private downMode: DownMode | undefined;
  private delayMs = 0;
  private readonly http: HttpFake;

  private constructor(readonly apiKey: string) {
    this.http = new HttpFake((req, res, body) => this.handle(req, res, body));
  }

  static async start(opts: { apiKey?: string } = {}): Promise<FakeFast2Sms> {
    const fake = new FakeFast2Sms(opts.apiKey ?? hex(20));
    await fake.http.listen();
    return fake;
  }

  get url(): string {
    return this.http.url;
  }

  /** the next `n` requests answer HTTP `status` with a non-JSON body, like a proxy would */
  failNext(n: number, status: number): void {
    for (let i = 0; i < n; i++) this.failQueue.push(status);
  }

  down(on: boolean, mode: DownMode = 'unavailable'): void {
    this.downMode = on ? mode : undefined;
  }

  /** answer `ms` later; the message is accepted first */
  slow(ms: number): void {
    this.delayMs = ms;
  }

  close(): Promise<void> {
    return this.http.close();
  }

  private handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
    if (req.method !== 'POST' || new URL(req.url ?? '/', 'http://x').pathname !== '/dev/bulkV2') {
      sendJson(res, 404, { return: false, status_code: 404, message: 'Not found' });
      return;
    }
    let json: Record<string, unknown> = {};
    try {
      const v: unknown = JSON.parse(raw);
      if (typeof v === 'object' && v !== null) json = { ...v };
    } catch {
      // an unparsable body is answered below as missing fields
    }
    const key = header(req, 'x-idempotency-key');
    const record: Fast2SmsRequestRecord = {
      route: json.route,
      message: json.message,
      numbers: json.numbers,
      flash: json.flash,
      authorized: req.headers.authorization === this.apiKey,
      status: 0,
      ...(key === undefined ? {} : { idempotencyKey: key }),
    };
    this.requests.push(record);
    const answer = (status: number, payload: object): void => {
      record.status = status;
      sendJson(res, status, payload);
    };
    const refuse = (status: number, statusCode: number, message: string): void =>
      answer(status, { return: false, status_code: statusCode, message });

    if (this.downMode === 'reset') return void req.socket.destroy();
    const forced = this.downMode === 'unavailable' ? 503 : this.failQueue.shift();
    if (forced !== undefined) {
      record.status = forced;
      if (!res.destroyed) res.writeHead(forced, { 'content-type': 'text/html' }).end(`<html><body>${forced}</body></html>`);
      return;
    }
    if (!record.authorized) return refuse(401, 412, 'Invalid Authentication, Check Authorization Key');
    if (json.route !== 'q') return refuse(400, 408, 'Invalid Route');
    if (typeof json.message !== 'string' || json.message === '') return refuse(400, 402, 'Message Text Missing');
    if (typeof json.numbers !== 'string' || json.numbers === '') return refuse(400, 405, 'Numbers Missing');
    const numbers = json.numbers.split(',');
    if (numbers.some((n) => !/^[6-9]\d{9}$/.test(n) || this.invalidNumbers.has(n))) {
      return refuse(400, 411, 'Invalid Numbers');
    }
    const message: Fast2SmsMessage = {
      requestId: hex(8),
      numbers,
      message: json.message,
      ...(key === undefined ? {} : { idempotencyKey: key }),
    };
    this.accepted.push(message);
    const payload = { return: true, request_id: message.requestId, message: ['SMS sent successfully.'] };
    if (this.delayMs > 0) this.http.later(this.delayMs, () => answer(200, payload));
    else answer(200, payload);
  }
}
