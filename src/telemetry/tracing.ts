/**
 * Traces across the handoff: the request that arms a timer, the escalation a sweep runs
 * later (maybe on another replica) and each SMS send share one trace. The later work is
 * picked up from the store, so the trace crosses it as a W3C `traceparent` string kept on
 * the timer and on each delivery.
 *
 * The active span lives in this object's own AsyncLocalStorage rather than in the OTel
 * global context manager: nothing here registers globals, so each Vigil (several run in
 * one test process) traces into its own provider. Without a provider every call is a
 * no-op that only runs the callback.
 *
 * Span attributes carry ids and outcomes only: never a phone number, a message body,
 * coordinates or a URL (Twilio's carry the account and, for lookups, the number).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  type TracerProvider,
} from '@opentelemetry/api';

export { SpanKind, type Span };

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /**
   * Where the span hangs: a W3C traceparent continues that trace (an invalid one starts a
   * new trace), `null` starts a new trace, absent means a child of the active span.
   */
  parent?: string | null;
}

export interface Tracing {
  /** false when no provider was given: spans are not recorded and `traceparent()` is undefined */
  readonly enabled: boolean;
  /** Run `fn` with a new span active; the span ends when `fn` settles (an error marks it failed). */
  inSpan<T>(name: string, opts: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T>;
  /** Start a span without activating it, for work that ends on an event (an HTTP request). */
  startSpan(name: string, opts: SpanOptions): Span;
  /** Run `fn` with `span` active. */
  run<T>(span: Span, fn: () => T): T;
  /** The active span as a W3C traceparent, to store with work that continues it later. */
  traceparent(): string | undefined;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** A W3C traceparent header → the remote span context it names; undefined when malformed. */
export function parseTraceparent(value: string | undefined): SpanContext | undefined {
  const m = value === undefined ? null : TRACEPARENT.exec(value.trim().toLowerCase());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  // version ff is forbidden; version 00 has exactly four fields
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  const sc: SpanContext = { traceId: traceId ?? '', spanId: spanId ?? '', traceFlags: parseInt(flags ?? '0', 16), isRemote: true };
  return isSpanContextValid(sc) ? sc : undefined;
}

export const formatTraceparent = (sc: SpanContext): string =>
  `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;

/** An error's kind for a span, never its message (a carrier's may quote the number). */
function markFailed(span: Span, err: unknown): void {
  const kind = err instanceof Error ? err.name : typeof err;
  span.setAttribute('error.type', kind);
  span.setStatus({ code: SpanStatusCode.ERROR, message: kind });
}

export function createTracing(provider?: TracerProvider): Tracing {
  if (!provider) return noTracing();
  const tracer = provider.getTracer('vigil');
  const active = new AsyncLocalStorage<Context>();

  const parentContext = (parent: string | null | undefined): Context => {
    if (parent === undefined) return active.getStore() ?? ROOT_CONTEXT;
    const sc = parent === null ? undefined : parseTraceparent(parent);
    return sc ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT;
  };
  const startSpan = (name: string, o: SpanOptions): Span =>
    tracer.startSpan(
      name,
      { kind: o.kind ?? SpanKind.INTERNAL, ...(o.attributes ? { attributes: o.attributes } : {}) },
      parentContext(o.parent),
    );
  const run = <T>(span: Span, fn: () => T): T => active.run(trace.setSpan(ROOT_CONTEXT, span), fn);

  return {
    enabled: true,
    startSpan,
    run,
    async inSpan(name, o, fn) {
      const span = startSpan(name, o);
      try {
        return await run(span, () => fn(span));
      } catch (err) {
        markFailed(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
    traceparent() {
      const sc = trace.getSpan(active.getStore() ?? ROOT_CONTEXT)?.spanContext();
      return sc && isSpanContextValid(sc) ? formatTraceparent(sc) : undefined;
    },
  };
}

/** Tracing off: no provider, no context kept, callbacks simply run. */
export function noTracing(): Tracing {
  const span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
  return {
    enabled: false,
    inSpan: (_name, _o, fn) => fn(span),
    startSpan: () => span,
    run: (_span, fn) => fn(),
    traceparent: () => undefined,
  };
}
