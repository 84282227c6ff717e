/**
 * Twilio carrier: one `messages.create` per attempt with the official `twilio` client.
 *
 * Twilio's Messages API has no idempotency key: a create whose answer was lost may have
 * sent the text, and creating again sends it twice. So a retry after an ambiguous attempt
 * (timeout, connection reset, a 2xx without a sid, or an attempt whose outcome was never
 * recorded) first lists the messages to that number from our sender since the delivery
 * was created and, if one carries exactly our body, records its SID instead of sending
 * again. A lookup that fails is a retryable failure of its own: the next attempt looks
 * again rather than guess "not sent".
 *
 * Our RequestClient subclass sends on `node:http`/`https` instead of the library's axios,
 * rewrites `*.twilio.com` to `baseUrl` (a proxy, or the local fake in tests) and bounds
 * each HTTP request by `timeoutMs`, connect to last byte.
 *
 * Nothing here logs: no body, number or credential leaves this file except in the request.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { SpanStatusCode } from '@opentelemetry/api';
import twilio from 'twilio';
import type RequestClient from 'twilio/lib/base/RequestClient.js';
import type { AttemptResult } from '../domain/delivery.js';
import { noTracing, SpanKind, type Tracing } from '../telemetry/tracing.js';
import { notStarted, type Carrier, type EarlierAttempts, type OutgoingSms, type SendGate } from './port.js';

export interface TwilioCarrierOptions {
  accountSid: string;
  authToken: string;
  /** the sender: an E.164 number or alphanumeric ID, or a Messaging Service SID (`MG…`) */
  from: string;
  /** where Twilio posts delivery receipts; default: none */
  statusCallbackUrl?: string;
  /** deadline of one HTTP request, connect to last byte; default 10000 */
  timeoutMs?: number;
  /** origin (optionally with a path prefix) that replaces `https://*.twilio.com`; default: none */
  baseUrl?: string;
  /** each HTTP request is a client span under the active (send) span; default: none */
  tracing?: Tracing;
  /** a PEM file of the CA certificates to trust instead of Node's (TWILIO_CA_BUNDLE); default: Node's */
  caBundleFile?: string;
  /** HTTP_PROXY: set → requests take the library's own path (axios, which sends through it); default: none */
  httpProxy?: string;
}

/**
 * Twilio error codes that are about load, not about the message, in case one arrives
 * with a plain 4xx: 20429 too many requests; 21611 the sender's queue is full.
 */
const RETRYABLE_TWILIO_CODES: ReadonlySet<number> = new Set([20429, 21611]);

/** Network error codes (Node, axios) that mean "the attempt did not complete". */
const TIMEOUT_CODES: ReadonlySet<string> = new Set(['ECONNABORTED', 'ETIMEDOUT', 'ERR_CANCELED', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * Outcomes after which Twilio may hold the message although we do not know it: the
 * request may have been written before the answer was lost. A refused connection or an
 * HTTP error answer is not among them. `carrier_*`: the adapter threw mid-send.
 */
const AMBIGUOUS_CODES: ReadonlySet<string> = new Set([
  'timeout',
  'net_econnreset',
  'net_epipe',
  'twilio_bad_response',
  'carrier_threw',
  'carrier_error',
]);
const LOOKUP_PREFIX = 'lookup_';

/** Whether an attempt that ended like this may have sent the text; an unrecorded outcome may have. */
const mayHaveBeenSent = (earlier: EarlierAttempts): boolean =>
  earlier.lastError === undefined || AMBIGUOUS_CODES.has(earlier.lastError) || earlier.lastError.startsWith(LOOKUP_PREFIX);

/** How far Twilio's clock may be behind the store's when comparing `date_created` with the delivery's creation. */
const CLOCK_SKEW_MS = 10 * 60_000;
/** Messages read per lookup at most: one number gets a handful of our texts a day. */
const LOOKUP_LIMIT = 200;

/**
 * The gate of the send in progress (OutgoingSms.gate), for the HTTP layer: every request the
 * library makes for it (each look-up page, the create) asks first whether its whole deadline
 * still fits inside the delivery's lease, and is not made when it does not.
 */
const currentGate = new AsyncLocalStorage<SendGate>();
const NOT_STARTED = 'VIGIL_NOT_STARTED';
const isNotStarted = (err: unknown): boolean => isRecord(err) && err.code === NOT_STARTED;

/** Sockets per origin: more than the dispatcher's default 96 sends in flight, so no send waits for one. */
const MAX_SOCKETS = 128;

/**
 * The twilio client's HTTP layer, on `node:http`/`node:https` rather than the library's
 * axios path (its documented `httpClient` extension point). One send through axios cost
 * 400–700 µs of CPU against 100–200 µs here (docs/sms.md, "Carrier setup"), and a burst's
 * 20,000 texts go through this one event loop. What it keeps from the library's client:
 * Basic (or `authStrategy`) authorization, the library's headers, form bodies with repeated
 * keys for lists, query parameters, no redirects, any status handed back to the library
 * (which raises RestException for ≥ 400), a JSON body parsed when it is JSON. With a proxy
 * (`HTTP_PROXY`) it falls back to the library's own path (axios through its proxy agent,
 * which the library builds from the environment itself).
 */
class VigilRequestClient extends twilio.RequestClient {
  private readonly agents: { http: http.Agent; https: https.Agent };
  private readonly viaProxy: boolean;

  constructor(
    private readonly deadlineMs: number,
    private readonly base: URL | undefined,
    private readonly tracing: Tracing = noTracing(),
    transport: { caBundleFile?: string; viaProxy: boolean } = { viaProxy: false },
  ) {
    // autoRetry stays off: retries belong to the dispatcher, which backs off and dead-letters.
    super({ timeout: deadlineMs, autoRetry: false, keepAlive: true, maxSockets: MAX_SOCKETS, maxTotalSockets: MAX_SOCKETS });
    // axios' `timeout` is a socket-idle timeout; a trickling answer would outlive it.
    this.axios.interceptors.request.use((config) => {
      config.signal ??= AbortSignal.timeout(this.deadlineMs);
      return config;
    });
    // Free sockets kept as many as used: a burst reuses its connections instead of
    // opening (and on https, handshaking) new ones whenever the send queue runs dry.
    const agentOpts = { keepAlive: true, maxSockets: MAX_SOCKETS, maxTotalSockets: MAX_SOCKETS, maxFreeSockets: MAX_SOCKETS };
    this.viaProxy = transport.viaProxy;
    const ca = transport.caBundleFile === undefined ? undefined : readFileSync(transport.caBundleFile);
    this.agents = { http: new http.Agent(agentOpts), https: new https.Agent({ ...agentOpts, ...(ca === undefined ? {} : { ca }) }) };
  }

  override request<TData>(opts: RequestClient.RequestOptions<TData>) {
    const gate = currentGate.getStore();
    if (gate && !gate.allows(this.deadlineMs))
      return Promise.reject(Object.assign(new Error('no request: it could outlast the delivery lease'), { code: NOT_STARTED }));
    const uri = this.rewrite(opts.uri);
    const url = new URL(uri);
    const method = opts.method.toUpperCase();
    // named by the resource, never the URL: it holds the account SID and, for lookups, the number
    const resource =
      url.pathname
        .split('/')
        .pop()
        ?.replace(/\.json$/, '') ?? '';
    const attributes = { 'http.request.method': method, 'server.address': url.hostname };
    return this.tracing.inSpan(`twilio ${method} ${resource}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      const res = this.viaProxy ? await super.request({ ...opts, uri }) : await this.send<TData>(url, method, opts);
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
      return res;
    });
  }

  /** `url` is ours to change: its query gets the params */
  private async send<TData>(url: URL, method: string, opts: RequestClient.RequestOptions<TData>): Promise<TwilioResponse<TData>> {
    if (opts.params !== undefined && opts.params !== null) {
      const query = formEncode(opts.params as Record<string, unknown>);
      if (query !== '') url.search = url.search === '' ? query : `${url.search.slice(1)}&${query}`;
    }
    const headers: Record<string, string> = { ...(opts.headers as Record<string, string> | undefined) };
    if (headers.Connection === undefined && headers.connection === undefined) headers.Connection = 'keep-alive';
    if (opts.username && opts.password) {
      headers.Authorization = `Basic ${Buffer.from(`${opts.username}:${opts.password}`).toString('base64')}`;
    } else if (opts.authStrategy) {
      headers.Authorization = await opts.authStrategy.getAuthString();
    }
    let body: string | undefined;
    if (opts.data !== undefined && opts.data !== null) {
      const type = headers['Content-Type'];
      if (type === 'application/x-www-form-urlencoded') body = formEncode(opts.data as Record<string, unknown>);
      else if (type === 'application/json') body = JSON.stringify(opts.data);
    }
    if (body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(body));
    const agent = url.protocol === 'https:' ? this.agents.https : this.agents.http;
    return exchange<TData>(url, method, headers, body, agent, this.deadlineMs);
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

interface TwilioResponse<TData> {
  statusCode: number;
  body: TData;
  headers: http.IncomingHttpHeaders;
}

/** `key=value` pairs, a list as the key repeated (the library's `arrayFormat: 'repeat'`); unset values left out. */
function formEncode(values: Record<string, unknown>): string {
  const parts: string[] = [];
  const add = (key: string, v: unknown): void => {
    if (v === undefined || v === null) return;
    const text = v instanceof Date ? v.toISOString() : typeof v === 'object' ? JSON.stringify(v) : String(v as string | number | boolean);
    parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(text)}`);
  };
  for (const [key, v] of Object.entries(values)) {
    if (Array.isArray(v)) for (const item of v) add(key, item);
    else add(key, v);
  }
  return parts.join('&');
}

/**
 * One request and its whole answer within `deadlineMs`, connect to last byte. Failures
 * carry what classifyTransportError reads: `TimeoutError` past the deadline, Node's
 * `code` (ECONNREFUSED, ECONNRESET, …) otherwise; an answer cut short is ECONNRESET.
 * The body is parsed when it is JSON and handed on as text when not, as axios does.
 */
function exchange<TData>(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  agent: http.Agent,
  deadlineMs: number,
): Promise<TwilioResponse<TData>> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (err: unknown): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(err);
    };
    const request = url.protocol === 'https:' ? https.request : http.request;
    const req = request(url, { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', fail);
      res.on('close', () => {
        if (!res.complete) fail(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
      });
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        if (text !== '') {
          try {
            parsed = JSON.parse(text);
          } catch {
            // not JSON: the library decides what a text answer means
          }
        }
        resolve({ statusCode: res.statusCode ?? 0, body: parsed as TData, headers: res.headers });
      });
    });
    const timer = setTimeout(() => {
      fail(Object.assign(new Error(`no complete answer within ${deadlineMs} ms`), { name: 'TimeoutError', code: 'ETIMEDOUT' }));
    }, deadlineMs);
    req.on('error', fail);
    req.end(body);
  });
}

export class TwilioCarrier implements Carrier {
  readonly name = 'twilio';
  /**
   * The Messages resource, taken once here: the library loads its API modules on first use,
   * about 100 ms of synchronous `require` on a 2-core machine, which would otherwise stall the
   * event loop at a fresh replica's first SOS text, in the middle of a burst's escalations.
   */
  private readonly messages: twilio.Twilio['messages'];
  private readonly from: string;
  private readonly statusCallback: string | undefined;

  constructor(opts: TwilioCarrierOptions) {
    const timeoutMs = opts.timeoutMs ?? 10_000;
    const base = opts.baseUrl === undefined ? undefined : new URL(opts.baseUrl);
    const client = twilio(opts.accountSid, opts.authToken, {
      httpClient: new VigilRequestClient(timeoutMs, base, opts.tracing, {
        caBundleFile: opts.caBundleFile,
        viaProxy: Boolean(opts.httpProxy),
      }),
      // never let TWILIO_LOG_LEVEL=debug dump request details from inside the library
      logLevel: 'info',
    });
    this.messages = client.messages;
    this.from = opts.from;
    this.statusCallback = opts.statusCallbackUrl;
  }

  send(sms: OutgoingSms): Promise<AttemptResult> {
    return sms.gate ? currentGate.run(sms.gate, () => this.attempt(sms)) : this.attempt(sms);
  }

  private async attempt(sms: OutgoingSms): Promise<AttemptResult> {
    if (sms.earlier !== undefined && mayHaveBeenSent(sms.earlier)) {
      let found: string | undefined;
      try {
        found = await this.findSent(sms, sms.earlier.since);
      } catch (err) {
        if (isNotStarted(err)) return notStarted(this.name, 'lease');
        const { code } = classifyTwilioError(err);
        return { ok: false, carrier: this.name, retryable: true, code: `${LOOKUP_PREFIX}${code}` };
      }
      if (found !== undefined) return { ok: true, carrier: this.name, providerMessageId: found };
    }
    return this.create(sms);
  }

  private async create(sms: OutgoingSms): Promise<AttemptResult> {
    const sender = this.isService ? { messagingServiceSid: this.from } : { from: this.from };
    try {
      const message = await this.messages.create({
        to: sms.to,
        body: sms.body,
        ...sender,
        ...(this.statusCallback === undefined ? {} : { statusCallback: this.statusCallback }),
      });
      // A 2xx without a sid is not proof of acceptance, nor of refusal: the retry looks first.
      if (typeof message.sid !== 'string' || message.sid === '') {
        return { ok: false, carrier: this.name, retryable: true, code: 'twilio_bad_response' };
      }
      return { ok: true, carrier: this.name, providerMessageId: message.sid };
    } catch (err) {
      if (isNotStarted(err)) return notStarted(this.name, 'lease');
      return { ok: false, carrier: this.name, ...classifyTwilioError(err) };
    }
  }

  /**
   * The SID of an outbound message to `sms.to` with exactly our body created since `since`
   * (less the clock skew), if Twilio has one. `DateSent>=` takes a day at most, so the
   * exact bound is applied here on `date_created`. A Messaging Service picks the sending
   * number itself, so with one only `To` is filtered.
   */
  private async findSent(sms: OutgoingSms, since: Date): Promise<string | undefined> {
    const after = since.getTime() - CLOCK_SKEW_MS;
    const day = new Date(after);
    const messages = await this.messages.list({
      to: sms.to,
      ...(this.isService ? {} : { from: this.from }),
      dateSentAfter: new Date(Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate())),
      pageSize: 50,
      limit: LOOKUP_LIMIT,
    });
    const match = messages.find(
      (m) => m.direction !== 'inbound' && m.body === sms.body && m.dateCreated instanceof Date && m.dateCreated.getTime() >= after,
    );
    return typeof match?.sid === 'string' && match.sid !== '' ? match.sid : undefined;
  }

  private get isService(): boolean {
    return this.from.startsWith('MG');
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
