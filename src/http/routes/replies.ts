/**
 * Replies from contacts: Twilio's incoming-message webhook (`POST /twilio`, form-encoded
 * From/To/Body/MessageSid), answered with TwiML. Mounted before the API's JSON parser and bearer
 * auth, like the receipts (./receipts.ts), and verified with the same code: an unsigned or
 * badly signed request is 403 `bad_signature`. A well-signed one is always answered 200 TwiML —
 * a fixed text or an empty `<Response/>` — never an error page. Nothing here logs or answers
 * with the body or the number.
 */
import { Router } from 'express';
import type { ContactReplies } from '../../app/contact-replies.js';
import { E164 } from '../../domain/contact.js';
import { replyText, twimlAnswer, type InboundOutcome } from '../../domain/inbound-sms.js';
import { twilioFormParams } from '../../sms/twilio-receipts.js';
import { signedByTwilio, twilioForm } from '../twilio-signature.js';

export interface ReplyDeps {
  replies: Pick<ContactReplies, 'handle'>;
  /** the Twilio auth token that signs webhooks; unset (no Twilio) → every reply is refused */
  authToken: string | undefined;
  /** the exact incoming-message URL given to Twilio (TWILIO_INBOUND_URL); unset → every reply is refused */
  publicUrl: string | undefined;
  now: () => Date;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  /** largest accepted webhook body; default 16kb */
  bodyLimit?: string;
}

const SID = /^[A-Za-z0-9]{2,64}$/;

export function replyRoutes(d: ReplyDeps): Router {
  const r = Router();
  r.use(twilioForm(d.bodyLimit));

  r.post('/twilio', async (req, res) => {
    const params = twilioFormParams(req.body);
    if (!signedByTwilio(req, res, params, { ...d, what: 'reply', urlSetting: 'TWILIO_INBOUND_URL' })) return;
    const from = typeof params.From === 'string' ? params.From : '';
    const sid = typeof params.MessageSid === 'string' ? params.MessageSid : '';
    const body = typeof params.Body === 'string' ? params.Body : undefined;
    let outcome: InboundOutcome = 'unknown_sender';
    if (E164.test(from) && SID.test(sid)) {
      try {
        outcome = await d.replies.handle({ from, body, messageSid: sid, at: d.now() });
      } catch (err) {
        // Twilio does not retry an incoming message; the sender gets no answer rather than an error page
        d.log.error({ err, reqId: req.requestId, message: sid }, 'reply not handled');
        return res.status(200).type('text/xml').send(twimlAnswer(undefined));
      }
    }
    // the carrier's message id ties this line to the reply; never the number or the body
    d.log.info({ reqId: req.requestId, message: sid || undefined, outcome }, 'contact reply');
    res
      .status(200)
      .type('text/xml')
      .send(twimlAnswer(replyText(outcome)));
  });

  return r;
}
