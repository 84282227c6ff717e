/**
 * Twilio carrier: one `messages.create` per attempt with the official `twilio` client.
 *
 * The delivery key travels as `I-Twilio-Idempotency-Token` on every attempt. `create()`
 * takes no per-call headers, so the key is carried from `send()` into our RequestClient
 * subclass through an AsyncLocalStorage: one client, one connection pool, and no shared
 * mutable state between concurrent sends. The same subclass rewrites `*.twilio.com` to
 * `baseUrl` (a proxy, or the local fake in tests) and bounds each attempt by `timeoutMs`.
 *
 * Nothing here logs: no body, number or credential leaves this file except in the request.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import twilio from 'twilio';
import type RequestClient from 'twilio/lib/base/RequestClient.js';
import type { AttemptResult } from '../domain/delivery.js';
import type { Carrier, OutgoingSms } from './port.js';

export interface TwilioCarrierOptions {
  accountSid: string;
  authToken: string;
  /** the sender: an E.164 number or alphanumeric ID, or a Messaging Service SID (`MG…`) */
  from: string;
  /** where Twilio posts delivery receipts; default: none */
  statusCallbackUrl?: string;
  /** deadline of one attempt, connect to last byte; default 10000 */
  timeoutMs?: number;
  /** origin (optionally with a path prefix) that replaces `https://*.twilio.com`; default: none */
  baseUrl?: string;
}

export const IDEMPOTENCY_HEADER = 'I-Twilio-Idempotency-Token';

/** The delivery key of the send whose HTTP request is being made. */
const currentKey = new AsyncLocalStorage<string>();

/**
 * Twilio error codes that are about load, not about the message, in case one arrives
 * with a plain 4xx: 20429 too many requests; 21611 the sender's queue is full.
 */
const RETRYABLE_TWILIO_CODES: ReadonlySet<number> = new Set([20429, 21611]);

/** Network error codes (Node, axios) that mean "the attempt did not complete". */
const TIMEOUT_CODES: ReadonlySet<string> = new Set(['ECONNABORTED', 'ETIMEDOUT', 'ERR_CANCELED', 'UND_ERR_CONNECT_TIMEOUT']);

class VigilRequestClient extends twilio.RequestClient {
  constructor(
    private readonly deadlineMs: number,
    private readonly base: URL | undefined,
  ) {
    // autoRetry stays off: retries belong to the dispatcher, which backs off and dead-letters.
    // 64 sockets: more than the dispatcher's default 50 sends in flight, so no send waits
    // for a socket (and times out waiting) while Twilio is merely slow.
    super({ timeout: deadlineMs, autoRetry: false, keepAlive: true, maxSockets: 64, maxTotalSockets: 64 });
    // axios' `timeout` is a socket-idle timeout; a trickling answer would outlive it.
    this.axios.interceptors.request.use((config) => {
      config.signal ??= AbortSignal.timeout(this.deadlineMs);
      return config;
    });
  }

  override request<TData>(opts: RequestClient.RequestOptions<TData>) {
    const headers = { ...opts.headers };
    const key = currentKey.getStore();
    if (key !== undefined) headers[IDEMPOTENCY_HEADER] = key;
    return super.request({ ...opts, uri: this.rewrite(opts.uri), headers });
  }

  private rewrite(uri: string): string {
    if (!this.base) return uri;
    const u = new URL(uri);
    if (u.hostname !== 'twilio.com' && !u.hostname.endsWith('.twilio.com')) return uri;
    const target = new URL(this.base.href);
    target.pathname = `${this.base.pathname.replace(/\/+$/, '')}${u.pathname}`;
    target.search = u.search;
    return target.href;
  }
}

export class TwilioCarrier implements Carrier {
  readonly name = 'twilio';
  private readonly client: twilio.Twilio;
  private readonly from: string;
  private readonly statusCallback: string | undefined;

  constructor(opts: TwilioCarrierOptions) {
    const timeoutMs = opts.timeoutMs ?? 10_000;
    const base = opts.baseUrl === undefined ? undefined : new URL(opts.baseUrl);
    this.client = twilio(opts.accountSid, opts.authToken, {
      httpClient: new VigilRequestClient(timeoutMs, base),
      // never let TWILIO_LOG_LEVEL=debug dump request details from inside the library
      logLevel: 'info',
    });
    this.from = opts.from;
    this.statusCallback = opts.statusCallbackUrl;
  }

  async send(sms: OutgoingSms): Promise<AttemptResult> {
    const sender = this.from.startsWith('MG') ? { messagingServiceSid: this.from } : { from: this.from };
    try {
      const message = await currentKey.run(sms.idempotencyKey, () =>
        this.client.messages.create({
          to: sms.to,
          body: sms.body,
          ...sender,
          ...(this.statusCallback === undefined ? {} : { statusCallback: this.statusCallback }),
        }),
      );
      // A 2xx without a sid is not proof of acceptance; the retry carries the same key.
      if (typeof message.sid !== 'string' || message.sid === '') {
        return { ok: false, carrier: this.name, retryable: true, code: 'twilio_bad_response' };
      }
      return { ok: true, carrier: this.name, providerMessageId: message.sid };
    } catch (err) {
      return { ok: false, carrier: this.name, ...classifyTwilioError(err) };
    }
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/**
 * An error from `messages.create` → retryable or not, and a short code.
 * HTTP answers (RestException / TwilioServiceException) carry a numeric `status` and a
 * numeric Twilio `code`; transport failures (axios, Node) carry a string `code`.
 */
export function classifyTwilioError(err: unknown): { retryable: boolean; code: string } {
  if (!isRecord(err)) return { retryable: true, code: 'error' };
  if (typeof err.status === 'number') {
    const status = err.status;
    const twilioCode = typeof err.code === 'number' ? err.code : undefined;
    if (status === 429 || status >= 500) return { retryable: true, code: `http_${status}` };
    if (twilioCode !== undefined && RETRYABLE_TWILIO_CODES.has(twilioCode)) {
      return { retryable: true, code: `twilio_${twilioCode}` };
    }
    // 21211/21217/21614 invalid or non-mobile number, 21610 unsubscribed, 20003 auth, …
    return { retryable: false, code: twilioCode !== undefined ? `twilio_${twilioCode}` : `http_${status}` };
  }
  return classifyTransportError(err);
}

function classifyTransportError(err: Record<string, unknown>): { retryable: boolean; code: string } {
  const cause = isRecord(err.cause) ? err.cause : undefined;
  const code = typeof err.code === 'string' ? err.code : typeof cause?.code === 'string' ? cause.code : undefined;
  const name = typeof err.name === 'string' ? err.name : '';
  if ((code !== undefined && TIMEOUT_CODES.has(code)) || name === 'TimeoutError' || name === 'AbortError') {
    return { retryable: true, code: 'timeout' };
  }
  if (code !== undefined) return { retryable: true, code: `net_${code.toLowerCase()}` };
  if (typeof err.message === 'string' && err.message.includes('socket hang up')) {
    return { retryable: true, code: 'net_econnreset' };
  }
  return { retryable: true, code: 'error' };
}
