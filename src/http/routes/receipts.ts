/**
 * Carrier delivery receipts: Twilio's status callback (`POST /twilio`, form-encoded).
 *
 * Mounted before the API's JSON parser and bearer auth (Twilio sends neither JSON nor a
 * token), so this router parses its own urlencoded body. Authenticity is the
 * `X-Twilio-Signature` HMAC over the URL Twilio was given — `publicUrl`, the
 * TWILIO_STATUS_CALLBACK_URL setting, never the URL of this request, which proxies and
 * load balancers rewrite — and every posted parameter; anything else is 403.
 *
 * Statuses move only forward (receiptFrom): a late `sent` after `delivered`, a duplicate,
 * or a receipt for a message we do not know changes nothing and is still answered 200, so
 * Twilio does not retry it. Nothing here logs a body, a number or the signature.
 */
import express, { Router } from 'express';
import twilio from 'twilio';
import { receiptFrom } from '../../domain/delivery.js';
import { maskPhone } from '../../domain/messages.js';
import { deliveryEvent, type EventPublisher } from '../../realtime/events.js';
import type { Store } from '../../store/port.js';
import { sendError } from '../errors.js';

export type ReceiptResult = 'applied' | 'stale' | 'ignored';

export interface ReceiptDeps {
  store: Pick<Store, 'applyReceipt'>;
  events: EventPublisher;
  /** the Twilio auth token that signs callbacks; unset (no Twilio) → every receipt is refused */
  authToken: string | undefined;
  /** the exact status callback URL given to Twilio (TWILIO_STATUS_CALLBACK_URL); unset → every receipt is refused */
  publicUrl: string | undefined;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** `vigil_sms_receipts_total{status,result}`; the Metrics object fits once it has `smsReceipts`; default: none */
  metrics?: { smsReceipts: { inc(labels: { status: string; result: ReceiptResult | 'bad_signature' }): void } };
  /** largest accepted callback body; default 16kb */
  bodyLimit?: string;
}

/** Twilio MessageStatus → our receipt; `undefined`: an intermediate state we do not record. */
const TWILIO_STATUS: Readonly<Record<string, 'sent' | 'delivered' | 'failed' | undefined>> = {
  queued: undefined,
  accepted: undefined,
  scheduled: undefined,
  sending: undefined,
  sent: 'sent',
  delivered: 'delivered',
  undelivered: 'failed',
  failed: 'failed',
};

/** A status label from a closed set: anything unexpected becomes `other`, never free text. */
const statusLabel = (s: string): string => (Object.hasOwn(TWILIO_STATUS, s) ? s : 'other');

/** The posted form as strings (repeated keys as arrays, as Twilio's validator expects). */
function formParams(body: unknown): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  if (typeof body !== 'object' || body === null) return out;
  for (const [k, v] of Object.entries(body)) {
    if (typeof v === 'string') out[k] = v;
    else if (Array.isArray(v) && v.every((x) => typeof x === 'string')) out[k] = v as string[];
  }
  return out;
}

function validSignature(
  authToken: string | undefined,
  signature: string | undefined,
  url: string | undefined,
  params: Record<string, string | string[]>,
): boolean {
  // without the token and the public URL nothing can be verified, so nothing is believed
  if (authToken === undefined || url === undefined || signature === undefined || signature === '') return false;
  try {
    return twilio.validateRequest(authToken, signature, url, params);
  } catch {
    return false; // e.g. an unsupported algorithm named by the caller
  }
}

/**
 * The receipts router, mounted at `/v1/receipts` whether or not Twilio is configured (the
 * route is part of the published API); unconfigured, it refuses everything with 403.
 */
export function receiptRoutes(d: ReceiptDeps): Router {
  const r = Router();
  r.use(express.urlencoded({ extended: false, limit: d.bodyLimit ?? '16kb', parameterLimit: 100 }));

  r.post('/twilio', async (req, res) => {
    const params = formParams(req.body);
    const status = typeof params.MessageStatus === 'string' ? params.MessageStatus.toLowerCase() : '';
    if (!validSignature(d.authToken, req.header('x-twilio-signature'), d.publicUrl, params)) {
      d.metrics?.smsReceipts.inc({ status: statusLabel(status), result: 'bad_signature' });
      const configured = d.authToken !== undefined && d.publicUrl !== undefined;
      d.log.warn(
        { reqId: req.requestId, carrier: 'twilio', configured },
        configured ? 'receipt refused: bad or missing X-Twilio-Signature' : 'receipt refused: TWILIO_AUTH_TOKEN / TWILIO_STATUS_CALLBACK_URL not set',
      );
      return sendError(res, 403, 'bad_signature', 'the X-Twilio-Signature header does not match this request');
    }
    const sid = params.MessageSid;
    if (typeof sid !== 'string' || !/^[A-Za-z0-9]{2,64}$/.test(sid) || status === '') {
      return sendError(res, 400, 'invalid_receipt', 'MessageSid and MessageStatus are required');
    }
    const to = Object.hasOwn(TWILIO_STATUS, status) ? TWILIO_STATUS[status] : undefined; // never `constructor` & co.
    let result: ReceiptResult = 'ignored';
    if (to !== undefined) {
      const moved = await d.store.applyReceipt(sid, to, receiptFrom(to));
      result = moved ? 'applied' : 'stale';
      if (moved) {
        d.events.publish(deliveryEvent(moved, maskPhone));
        const errorCode = typeof params.ErrorCode === 'string' && /^\d{1,6}$/.test(params.ErrorCode) ? params.ErrorCode : undefined;
        d.log.info({ delivery: moved.key, incident: moved.incidentId, carrier: 'twilio', status: moved.status, errorCode }, 'delivery receipt applied');
      }
    }
    d.metrics?.smsReceipts.inc({ status: statusLabel(status), result });
    res.status(200).json({ result });
  });

  return r;
}
