/**
 * Twilio status callbacks: what a posted form says, and whether Twilio signed it.
 * Authenticity is the `X-Twilio-Signature` HMAC over the URL Twilio was given (the
 * TWILIO_STATUS_CALLBACK_URL setting, never the URL of the request, which proxies
 * rewrite) and every posted parameter.
 */
import twilio from 'twilio';

export type TwilioParams = Record<string, string | string[]>;

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

export interface TwilioReceipt {
  /** MessageStatus, lower case; '' when missing */
  status: string;
  /** a metric label from a closed set: anything unexpected becomes `other`, never free text */
  statusLabel: string;
  /** MessageSid when well formed */
  sid: string | undefined;
  /** the receipt to record; undefined for intermediate or unknown statuses */
  to: 'sent' | 'delivered' | 'failed' | undefined;
  /** Twilio's numeric ErrorCode when present */
  errorCode: string | undefined;
}

/** The posted form as strings (repeated keys as arrays, as Twilio's validator expects). */
export function twilioFormParams(body: unknown): TwilioParams {
  const out: TwilioParams = {};
  if (typeof body !== 'object' || body === null) return out;
  for (const [k, v] of Object.entries(body)) {
    if (typeof v === 'string') out[k] = v;
    else if (Array.isArray(v) && v.every((x) => typeof x === 'string')) out[k] = v as string[];
  }
  return out;
}

export function parseTwilioReceipt(params: TwilioParams): TwilioReceipt {
  const status = typeof params.MessageStatus === 'string' ? params.MessageStatus.toLowerCase() : '';
  const known = Object.hasOwn(TWILIO_STATUS, status); // never `constructor` & co.
  const sid = typeof params.MessageSid === 'string' && /^[A-Za-z0-9]{2,64}$/.test(params.MessageSid) ? params.MessageSid : undefined;
  const errorCode = typeof params.ErrorCode === 'string' && /^\d{1,6}$/.test(params.ErrorCode) ? params.ErrorCode : undefined;
  return { status, statusLabel: known ? status : 'other', sid, to: known ? TWILIO_STATUS[status] : undefined, errorCode };
}

export function validTwilioSignature(
  authToken: string | undefined,
  signature: string | undefined,
  url: string | undefined,
  params: TwilioParams,
): boolean {
  // without the token and the public URL nothing can be verified, so nothing is believed
  if (authToken === undefined || url === undefined || signature === undefined || signature === '') return false;
  try {
    return twilio.validateRequest(authToken, signature, url, params);
  } catch {
    return false; // e.g. an unsupported algorithm named by the caller
  }
}
