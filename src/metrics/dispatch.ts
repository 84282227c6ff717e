/** Texts: attempts, receipts, caps, the carrier circuit. */
import client from 'prom-client';
import { labelledCounter } from './labelled.js';

export function dispatchMetrics(r: client.Registry[]) {
  return {
    deliveries: labelledCounter({
      name: 'vigil_deliveries_total',
      help: 'Delivery attempts by carrier and outcome; superseded (carrier none): not sent after "I\'m safe" or a resolve; not_started (carrier none): claimed, but given back unsent (its lease ran short, or it waits for another text of its contact)',
      labels: {
        carrier: { open: 'the carrier that made the attempt; `none` for a text that made no carrier request' },
        outcome: ['sent', 'retry', 'failed', 'dead', 'superseded', 'not_started'],
      },
      registers: r,
    }),
    sosSmsLatency: new client.Histogram({
      name: 'vigil_sos_sms_latency_seconds',
      help: 'Time from an SOS being queued for a contact (when the incident opens) to a carrier accepting the text',
      buckets: [0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600],
      registers: r,
    }),
    carrierCircuit: new client.Gauge({
      name: 'vigil_carrier_circuit_state',
      help: 'Primary carrier circuit: 0 closed, 0.5 half-open, 1 open (sending through the secondary)',
      registers: r,
    }),
    smsReceipts: labelledCounter({
      name: 'vigil_sms_receipts_total',
      help: 'Carrier delivery receipts by reported status and what they did',
      labels: {
        status: { open: "Twilio's `MessageStatus`; `other` for any status Vigil does not know" },
        result: ['applied', 'stale', 'ignored', 'bad_signature'],
      },
      registers: r,
    }),
    smsCapped: labelledCounter({
      name: 'vigil_sms_capped_total',
      help: 'SMS not created because an abuse cap was reached, by reason',
      labels: { reason: ['per_incident', 'per_day'] },
      registers: r,
    }),
  };
}
