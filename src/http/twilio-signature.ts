/**
 * The one check of every webhook Twilio calls (delivery receipts, replies): the
 * `X-Twilio-Signature` over the public URL Twilio was given and the posted form
 * (../sms/twilio-receipts.ts). A request that fails it is answered 403 `bad_signature` here.
 */
import express, { type Request, type RequestHandler, type Response } from 'express';
import { validTwilioSignature, type TwilioParams } from '../sms/twilio-receipts.js';
import { sendError } from './errors.js';

export interface TwilioWebhook {
  /** the Twilio auth token that signs webhooks; unset → every request is refused */
  authToken: string | undefined;
  /** the exact public URL given to Twilio for this webhook; unset → every request is refused */
  publicUrl: string | undefined;
  log: { warn(obj: object, msg: string): void };
}

/** True when the request is signed; else answers 403 `bad_signature` (logged, without the body) and returns false. */
export function signedByTwilio(
  req: Request,
  res: Response,
  params: TwilioParams,
  w: TwilioWebhook & { what: 'receipt' | 'reply'; urlSetting: string },
): boolean {
  if (validTwilioSignature(w.authToken, req.header('x-twilio-signature'), w.publicUrl, params)) return true;
  const configured = w.authToken !== undefined && w.publicUrl !== undefined;
  w.log.warn(
    { reqId: req.requestId, carrier: 'twilio', configured },
    configured ? `${w.what} refused: bad or missing X-Twilio-Signature` : `${w.what} refused: TWILIO_AUTH_TOKEN / ${w.urlSetting} not set`,
  );
  sendError(res, 403, 'bad_signature', 'the X-Twilio-Signature header does not match this request');
  return false;
}

/** The form Twilio posts (urlencoded, flat): parsed by the webhook's own router, ahead of the API's JSON parser. */
export const twilioForm = (bodyLimit = '16kb'): RequestHandler =>
  express.urlencoded({ extended: false, limit: bodyLimit, parameterLimit: 100 });
