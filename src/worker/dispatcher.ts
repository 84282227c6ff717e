/**
 * Sends due deliveries. Each tick leases what is due (the attempt is counted in the
 * store before the carrier is called) and sends without waiting for the others: one
 * slow or bad number never holds back the rest. A lease that lapses (crash, hang) makes
 * the delivery claimable again; a retry tells the carrier how the last attempt ended, so
 * a carrier that can look up what it accepted checks before sending again.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { outcomeOf, type AttemptResult, type Delivery, type RetryPolicy } from '../domain/delivery.js';
import { maskPhone } from '../domain/messages.js';
import type { Metrics } from '../metrics.js';
import { deliveryEvent, type EventPublisher } from '../realtime/events.js';
import type { Carrier, OutgoingSms } from '../sms/port.js';
import type { Store } from '../store/port.js';
import { noTracing, SpanKind, type Tracing } from '../telemetry/tracing.js';

export interface DispatchSettings {
  /** most sends in flight at once on this replica */
  maxInFlight: number;
  /** how long a claimed delivery is ours before another dispatcher may retry it */
  leaseMs: number;
  retry: RetryPolicy;
  /** each send continues the trace stored on its delivery; none when absent */
  tracing?: Tracing;
}

export class Dispatcher {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly tracing: Tracing;

  constructor(
    private readonly store: Store,
    private readonly carrier: Carrier,
    private readonly events: EventPublisher,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly settings: DispatchSettings,
    private readonly random: () => number = Math.random,
  ) {
    this.tracing = settings.tracing ?? noTracing();
  }

  /** Claim what is due (up to the free slots) and start sending it; returns how many were started. */
  async tick(): Promise<number> {
    const free = this.settings.maxInFlight - this.inFlight.size;
    if (free <= 0) return 0;
    const claimed = await this.store.claimDeliveries(free, this.settings.leaseMs);
    for (const d of claimed) {
      const p = this.sendOne(d).finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    }
    return claimed.length;
  }

  /** Wait for every send in flight (shutdown, tests). */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  get busy(): number {
    return this.inFlight.size;
  }

  private sendOne(d: Delivery): Promise<void> {
    const attributes = { 'vigil.delivery.key': d.key, 'vigil.incident.id': d.incidentId, 'vigil.delivery.kind': d.kind, 'vigil.delivery.attempt': d.attempts };
    return this.tracing.inSpan('vigil.sms.send', { kind: SpanKind.CONSUMER, parent: d.traceparent ?? null, attributes }, (span) =>
      this.sendTraced(d, (status) => {
        span.setAttribute('vigil.delivery.outcome', status);
        if (status === 'failed' || status === 'dead') span.setStatus({ code: SpanStatusCode.ERROR, message: status });
      }),
    );
  }

  private async sendTraced(d: Delivery, traceOutcome: (status: string) => void): Promise<void> {
    try {
      const { retry } = this.settings;
      let result: AttemptResult;
      if (d.attempts > retry.maxAttempts) {
        // claimed again after a lapsed lease on its last attempt: do not exceed the cap
        result = { ok: false, carrier: d.carrier ?? this.carrier.name, retryable: true, code: 'attempts_exhausted' };
      } else {
        result = await this.carrier
          .send({ to: d.phone, body: d.body, idempotencyKey: d.key, ...earlierOf(d) })
          .catch((err: unknown): AttemptResult => {
            this.log.warn({ err, delivery: d.key }, 'carrier threw; treating as retryable');
            return { ok: false, carrier: this.carrier.name, retryable: true, code: 'carrier_error' };
          });
      }
      const o = outcomeOf(retry, Math.min(d.attempts, retry.maxAttempts), result, this.random);
      const now = await this.store.now();
      const recorded = await this.store.recordAttempt(d.key, d.attempts, {
        status: o.status,
        carrier: result.carrier,
        providerMessageId: o.status === 'sent' ? o.providerMessageId : undefined,
        error: o.status === 'sent' ? undefined : o.error,
        nextAttemptAt: o.status === 'pending' ? new Date(now.getTime() + o.retryInMs) : undefined,
      });
      this.metrics.deliveries.inc({ carrier: result.carrier, outcome: o.status === 'pending' ? 'retry' : o.status });
      traceOutcome(o.status);
      if (!recorded) {
        this.metrics.casConflicts.inc({ command: 'record_attempt' });
        this.log.warn({ delivery: d.key, attempt: d.attempts }, 'delivery lease lost before the outcome was recorded');
        return;
      }
      if (o.status === 'sent' && d.kind === 'sos') this.metrics.sosSmsLatency.observe(Math.max(0, (now.getTime() - d.createdAt.getTime()) / 1000));
      const level = o.status === 'dead' || o.status === 'failed' ? 'error' : 'info';
      this.log[level](
        { delivery: d.key, incident: d.incidentId, kind: d.kind, attempt: d.attempts, carrier: result.carrier, status: o.status, recipient: maskPhone(d.phone), error: o.status === 'sent' ? undefined : o.error },
        'delivery attempt recorded',
      );
      this.events.publish(deliveryEvent(recorded, maskPhone));
    } catch (err) {
      // store trouble: the lease lapses and another tick retries with the same key
      this.metrics.loopErrors.inc({ loop: 'dispatch' });
      this.log.error({ err, delivery: d.key }, 'delivery attempt could not be recorded');
    }
  }
}

/** A retry tells the carrier how the last attempt ended, so it can look before sending again. */
const earlierOf = (d: Delivery): Pick<OutgoingSms, 'earlier'> =>
  d.attempts > 1 ? { earlier: { since: d.createdAt, ...(d.lastError === undefined ? {} : { lastError: d.lastError }) } } : {};
