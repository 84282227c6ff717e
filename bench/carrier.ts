/**
 * The carrier of a run: the fake Twilio the tests use (test/helpers/fake-twilio.ts), answering
 * every create 50 ms late, and the "contact SOS accepted" figure read from what it accepted.
 * Vigil and the BullMQ baseline send to it alike (Twilio's REST API, basic auth).
 */
import { FakeTwilio } from '../test/helpers/fake-twilio.js';
import { waitUntil } from './measure.js';
import { spread, type Row } from './result.js';

/** how late the fake carrier answers each send, ms */
export const CARRIER_LATENCY_MS = 50;
export const CARRIER_FROM = '+15005550006';

export class Carrier {
  private constructor(readonly fake: FakeTwilio) {}

  static async start(): Promise<Carrier> {
    const fake = await FakeTwilio.start();
    fake.slow(CARRIER_LATENCY_MS);
    return new Carrier(fake);
  }

  /** what a Twilio client needs to send here */
  get account(): { url: string; accountSid: string; authToken: string; from: string } {
    return { url: this.fake.url, accountSid: this.fake.accountSid, authToken: this.fake.authToken, from: CARRIER_FROM };
  }

  /** Wait until `expected` messages were accepted (notes it when giving up after `timeoutMs`). */
  async waitFor(expected: number, row: Row, timeoutMs = Math.max(90_000, expected * 25)): Promise<void> {
    if (!(await waitUntil(() => this.fake.accepted.length >= expected, Date.now() + timeoutMs)))
      row.notes.push('gave up waiting for the carrier');
  }

  /**
   * Sets `row.texts`: deadline → each contact's SOS accepted. The first message each contact got is their SOS;
   * accepted = the carrier's answer (its arrival + the carrier's latency). `deadlineOf` says whose contact a number
   * is (undefined: not one of the workload's). With `row.smsExpected` set, also the SMS drain: last acceptance − `lastDeadline`.
   */
  figures(row: Row, expected: number, deadlineOf: (to: string) => number | undefined, lastDeadline: number): void {
    const accepted = this.fake.accepted;
    const firstTo = new Map<string, number>();
    for (const m of accepted) if (!firstTo.has(m.to)) firstTo.set(m.to, m.dateCreated.getTime() + CARRIER_LATENCY_MS);
    const late: number[] = [];
    for (const [to, at] of firstTo) {
      const deadline = deadlineOf(to);
      if (deadline !== undefined) late.push(at - deadline);
    }
    const s = spread(late);
    if (s) row.texts = { ...s, count: late.length, expected };
    if (row.smsExpected !== undefined) {
      row.smsSent = accepted.length;
      if (accepted.length) row.smsDrainMs = accepted.reduce((a, m) => Math.max(a, m.dateCreated.getTime()), -Infinity) - lastDeadline;
    }
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
