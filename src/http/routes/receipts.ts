/**
 * Carrier delivery receipts: Twilio's status callback (`POST /twilio`, form-encoded).
 * Mounted before the API's JSON parser and bearer auth (Twilio sends neither), so it
 * parses its own urlencoded body; an unsigned receipt is 403 (../../sms/twilio-receipts.ts).
 *
 * A receipt moves only the delivery whose current message it is about, and only forward
 * (receiptFrom): a late or duplicate receipt changes nothing. One about a message no attempt
 * has recorded (its outcome is still being written; or resent or re-claimed since) is kept by
 * the store and applied when that attempt is recorded. Every case is answered 200, so Twilio
 * does not retry it. Nothing here logs a body, a number or the signature.
 */
import { Router } from 'express';
import { receiptFrom } from '../../domain/delivery.js';
import { maskPhone } from '../../domain/messages.js';
import { deliveryEvent, type EventPublisher } from '../../realtime/events.js';
import { parseTwilioReceipt, twilioFormParams } from '../../sms/twilio-receipts.js';
import type { ReceiptOutcome, Store } from '../../store/port.js';
import { sendError } from '../errors.js';
import { signedByTwilio, twilioForm } from '../twilio-signature.js';

/** `applied`, `kept`, `stale`: what the store did (ReceiptOutcome); `ignored`: an intermediate status, not recorded */
export type ReceiptResult = ReceiptOutcome['result'] | 'ignored';

export interface ReceiptDeps {
  store: Pick<Store, 'applyReceipt'>;
  events: EventPublisher;
  /** the Twilio auth token that signs callbacks; unset (no Twilio) → every receipt is refused */
  authToken: string | undefined;
  /** the exact status callback URL given to Twilio (TWILIO_STATUS_CALLBACK_URL); unset → every receipt is refused */
  publicUrl: string | undefined;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** `vigil_sms_receipts_total{status,result}`; default: none */
  metrics?: { smsReceipts: { inc(labels: { status: string; result: ReceiptResult | 'bad_signature' }): void } };
  /** largest accepted callback body; default 16kb */
  bodyLimit?: string;
}

/**
 * The receipts router, mounted at `/v1/receipts` whether or not Twilio is configured (the
 * route is part of the published API); unconfigured, it refuses everything with 403.
 */
export function receiptRoutes(d: ReceiptDeps): Router {
  const r = Router();
  r.use(twilioForm(d.bodyLimit));

  r.post('/twilio', async (req, res) => {
    const params = twilioFormParams(req.body);
    const receipt = parseTwilioReceipt(params);
    if (!signedByTwilio(req, res, params, { ...d, what: 'receipt', urlSetting: 'TWILIO_STATUS_CALLBACK_URL' })) {
      d.metrics?.smsReceipts.inc({ status: receipt.statusLabel, result: 'bad_signature' });
      return;
    }
    if (receipt.sid === undefined || receipt.status === '') {
      return sendError(res, 400, 'invalid_receipt', 'MessageSid and MessageStatus are required');
    }
    let result: ReceiptResult = 'ignored';
    if (receipt.to !== undefined) {
      const out = await d.store.applyReceipt(receipt.sid, receipt.to, receiptFrom(receipt.to));
      result = out.result;
      if (out.result === 'applied') {
        const moved = out.delivery;
        d.events.publish(deliveryEvent(moved, maskPhone));
        d.log.info(
          { delivery: moved.key, incident: moved.incidentId, carrier: 'twilio', status: moved.status, errorCode: receipt.errorCode },
          'delivery receipt applied',
        );
      } else if (out.result === 'kept') {
        // the message id is the carrier's, not personal: it ties this line to the attempt that records it, if one does
        d.log.info(
          { message: receipt.sid, carrier: 'twilio', status: receipt.to, errorCode: receipt.errorCode },
          'delivery receipt kept: no attempt has recorded its message (yet)',
        );
      }
    }
    d.metrics?.smsReceipts.inc({ status: receipt.statusLabel, result });
    res.status(200).json({ result });
  });

  return r;
}
