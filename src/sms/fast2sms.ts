/**
 * Fast2SMS carrier: the bulk API (`POST /dev/bulkV2`, Quick SMS route) over `fetch`, for
 * Indian numbers only (`+91` and ten digits; anything else is refused without a request).
 * Fast2SMS cannot dedupe, so a retry after an ambiguous failure may send twice; for an
 * SOS a duplicate is the lesser harm. Nothing here logs a body, number or key.
 */
import type { AttemptResult } from '../domain/delivery.js';
import { notStarted, type Carrier, type OutgoingSms } from './port.js';

export interface Fast2SmsCarrierOptions {
  /** the account's API key, sent as the `authorization` header */
  apiKey: string;
  /** default https://www.fast2sms.com */
  baseUrl?: string;
  /** deadline of one attempt, connect to last byte; default 10000 */
  timeoutMs?: number;
}

/** An Indian mobile number in E.164: +91 then ten digits starting 6–9. */
const INDIAN_MOBILE = /^\+91([6-9]\d{9})$/;

type Failure = { retryable: boolean; code: string };

export class Fast2SmsCarrier implements Carrier {
  readonly name = 'fast2sms';
  private readonly endpoint: string;
  private readonly timeoutMs: number;

  constructor(private readonly opts: Fast2SmsCarrierOptions) {
    const base = (opts.baseUrl ?? 'https://www.fast2sms.com').replace(/\/+$/, '');
    this.endpoint = `${base}/dev/bulkV2`;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  async send(sms: OutgoingSms): Promise<AttemptResult> {
    const local = localNumber(sms.to);
    if (typeof local !== 'string') return this.fail(local);
    // one request, bounded by timeoutMs: it must end inside the delivery's lease (SendGate)
    if (sms.gate && !sms.gate.allows(this.timeoutMs)) return notStarted(this.name, 'lease');
    let status: number;
    let text: string;
    try {
      const res = await fetch(this.endpoint, {
        method: 'POST',
        headers: {
          authorization: this.opts.apiKey,
          'content-type': 'application/json',
          accept: 'application/json',
          'x-idempotency-key': sms.idempotencyKey,
        },
        body: JSON.stringify({ route: 'q', message: sms.body, numbers: local, flash: 0 }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      status = res.status;
      text = await res.text();
    } catch (err) {
      return this.fail(classifyFetchError(err));
    }
    const answer = parseAnswer(text);
    if (status >= 200 && status < 300 && answer?.return === true) {
      if (typeof answer.request_id === 'string' && answer.request_id !== '') {
        return { ok: true, carrier: this.name, providerMessageId: answer.request_id };
      }
      // accepted without an id: cannot be tracked; retrying may duplicate, losing it is worse
      return this.fail({ retryable: true, code: 'fast2sms_bad_response' });
    }
    return this.fail(classifyAnswer(status, answer));
  }

  private fail(f: Failure): AttemptResult {
    return { ok: false, carrier: this.name, ...f };
  }
}

/** `+91XXXXXXXXXX` → the ten digits Fast2SMS wants, or why it cannot be sent. */
function localNumber(to: string): string | Failure {
  const m = INDIAN_MOBILE.exec(to);
  if (m?.[1] !== undefined) return m[1];
  if (to.startsWith('+') && !to.startsWith('+91')) return { retryable: false, code: 'fast2sms_unsupported_country' };
  return { retryable: false, code: 'fast2sms_invalid_number' };
}

interface Answer {
  return?: unknown;
  request_id?: unknown;
  status_code?: unknown;
}

function parseAnswer(text: string): Answer | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null ? (v as Answer) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A refusal. Fast2SMS answers 400/401 with its own `status_code` for everything about the
 * request or the account (411 invalid numbers, 412/413 bad key, 415 account disabled,
 * 416 no balance, 995 spam guard, 996/998/999 account not set up, and 500 for a DLT
 * blacklist — a status_code, not an HTTP 500): none of these improves by retrying.
 * HTTP 429 and 5xx are load or outage: retry.
 */
function classifyAnswer(status: number, answer: Answer | undefined): Failure {
  const retryable = status === 429 || status >= 500;
  const statusCode = answer?.status_code;
  const known = typeof statusCode === 'number' || (typeof statusCode === 'string' && /^\d+$/.test(statusCode));
  if (retryable) return { retryable, code: `http_${status}` };
  if (known) return { retryable: false, code: `fast2sms_${String(statusCode)}` };
  // a 2xx with `return: false` and no code, or an unexpected 2xx/3xx/4xx
  return { retryable: false, code: status >= 200 && status < 300 ? 'fast2sms_rejected' : `http_${status}` };
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** fetch rejects with a TimeoutError for our deadline and a TypeError whose cause has the socket error. */
function classifyFetchError(err: unknown): Failure {
  if (!isRecord(err)) return { retryable: true, code: 'error' };
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return { retryable: true, code: 'timeout' };
  const cause = isRecord(err.cause) ? err.cause : undefined;
  const code = typeof cause?.code === 'string' ? cause.code : typeof err.code === 'string' ? err.code : undefined;
  if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT') {
    return { retryable: true, code: 'timeout' };
  }
  if (code !== undefined) return { retryable: true, code: `net_${code.toLowerCase()}` };
  return { retryable: true, code: 'error' };
}
