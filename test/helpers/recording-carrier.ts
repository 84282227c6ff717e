/** A carrier that records every text it is asked to send and accepts it (tests read the bodies). */
import type { AttemptResult } from '../../src/domain/delivery.js';
import type { Carrier, OutgoingSms } from '../../src/sms/port.js';

export class RecordingCarrier implements Carrier {
  readonly name = 'recording';
  readonly sent: OutgoingSms[] = [];

  async send(sms: OutgoingSms): Promise<AttemptResult> {
    this.sent.push(sms);
    return { ok: true, carrier: this.name, providerMessageId: `rec-${this.sent.length}` };
  }

  /** bodies sent under delivery keys that end with `suffix` (`:moved`), or SOS keys (two parts) when `suffix` is 'sos' */
  bodies(kind: 'sos' | 'moved' | 'all_clear'): string[] {
    return this.sent
      .filter((s) => (kind === 'sos' ? s.idempotencyKey.split(':').length === 2 : s.idempotencyKey.endsWith(`:${kind}`)))
      .map((s) => s.body);
  }
}

/** Accepts every text after `latencyMs`; records when each send arrived (performance.now()). */
export class LatencyCarrier implements Carrier {
  readonly name = 'fake';
  readonly arrivals: number[] = [];
  constructor(private readonly latencyMs: number) {}

  async send(sms: OutgoingSms): Promise<AttemptResult> {
    this.arrivals.push(performance.now());
    await new Promise((r) => setTimeout(r, this.latencyMs));
    return { ok: true, carrier: this.name, providerMessageId: `fake:${sms.idempotencyKey}` };
  }
}
