/**
 * Console carrier: the default when no carrier is configured. It sends nothing;
 * it records the message as simulated and logs it with the number masked and
 * without its body.
 */
import { maskPhone } from '../domain/messages.js';
import type { AttemptResult } from '../domain/delivery.js';
import type { Carrier, OutgoingSms } from './port.js';

export interface ConsoleLog {
  info(obj: object, msg: string): void;
}

export class ConsoleCarrier implements Carrier {
  readonly name = 'console';
  /** the messages "sent", for a local run to inspect; bounded */
  readonly outbox: OutgoingSms[] = [];

  constructor(
    private readonly log: ConsoleLog,
    private readonly keep = 1000,
  ) {}

  async send(sms: OutgoingSms): Promise<AttemptResult> {
    this.outbox.push(sms);
    if (this.outbox.length > this.keep) this.outbox.shift();
    this.log.info({ recipient: maskPhone(sms.to), key: sms.idempotencyKey, chars: sms.body.length }, 'simulated SMS');
    return { ok: true, carrier: this.name, providerMessageId: `simulated:${sms.idempotencyKey}` };
  }
}
