import { randomBytes } from 'node:crypto';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { tracerProviderFor } from '../../src/telemetry/provider.js';
import { createTracing, noTracing, parseTraceparent } from '../../src/telemetry/tracing.js';

const SECRET = { JWT_SECRET: randomBytes(32).toString('hex') };
const tracingOf = (env: Record<string, string>) => loadConfig({ ...SECRET, ...env }).tracing;
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('tracing configuration', () => {
  it('is off by default: no exporter, no provider', () => {
    expect(tracingOf({})).toEqual({ exporter: 'none' });
    expect(tracerProviderFor(tracingOf({}))).toBeUndefined();
  });

  it('an OTLP endpoint turns OTLP/HTTP on, to its /v1/traces, with the configured headers and timeout', () => {
    expect(
      tracingOf({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
        OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc, x-team=safety',
        REPLICA_ID: 'vigil-7d9f-abc',
      }),
    ).toEqual({
      exporter: 'otlp',
      url: 'http://collector:4318/v1/traces',
      headers: { authorization: 'Bearer abc', 'x-team': 'safety' },
      timeoutMs: 10000,
      serviceName: 'vigil',
      instanceId: 'vigil-7d9f-abc',
    });
    expect(tracingOf({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SERVICE_NAME: 'vigil-eu' })).toMatchObject({ serviceName: 'vigil-eu' });
    expect(tracingOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:9999/traces', OTEL_EXPORTER_OTLP_TIMEOUT: '2500' })).toMatchObject({
      url: 'http://c:9999/traces',
      timeoutMs: 2500,
    });
    expect(tracingOf({ OTEL_TRACES_EXPORTER: 'otlp' })).toMatchObject({ exporter: 'otlp', url: 'http://localhost:4318/v1/traces' });
  });

  it('OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED=true keep it off even with an endpoint', () => {
    expect(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' })).toEqual({ exporter: 'none' });
    expect(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })).toEqual({ exporter: 'none' });
  });

  it('bad values stop start-up naming the variable', () => {
    expect(() => tracingOf({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/OTEL_TRACES_EXPORTER/);
    expect(() => tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(() => tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'novalue' })).toThrow(ConfigError);
    expect(() => tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'a=%E0%A4%A' })).toThrow(
      /OTEL_EXPORTER_OTLP_HEADERS/,
    );
  });
});

describe('traceparent', () => {
  it('accepts a W3C traceparent and refuses malformed ones', () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: true });
    for (const bad of [
      undefined,
      '',
      'garbage',
      `00-${TRACE}-${SPAN}`,
      `ff-${TRACE}-${SPAN}-01`,
      `00-${'0'.repeat(32)}-${SPAN}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE}-${SPAN}-01-extra`,
    ])
      expect(parseTraceparent(bad)).toBeUndefined();
    // a later version may add fields
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-extra`)).toMatchObject({ traceId: TRACE });
  });
});

describe('Tracing', () => {
  it('off: callbacks run and their results and errors pass through, nothing is recorded, no traceparent to store', async () => {
    const t = noTracing();
    expect(t.enabled).toBe(false);
    expect(await t.inSpan('x', { parent: `00-${TRACE}-${SPAN}-01` }, async (span) => [span.isRecording(), t.traceparent()])).toEqual([
      false,
      undefined,
    ]);
    await expect(t.inSpan('x', {}, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(t.run(t.startSpan('x', {}), () => 7)).toBe(7);
  });

  it('on: a span continues a stored traceparent, nests the spans started inside it and exposes its own traceparent', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const t = createTracing(provider);
    const stored = await t.inSpan('outer', { parent: `00-${TRACE}-${SPAN}-01`, kind: SpanKind.CONSUMER }, async () => {
      await new Promise((r) => setTimeout(r, 1));
      return t.inSpan('inner', {}, async () => t.traceparent());
    });
    const [inner, outer] = exporter.getFinishedSpans();
    expect(outer?.parentSpanContext?.spanId).toBe(SPAN);
    expect(inner?.parentSpanContext?.spanId).toBe(outer?.spanContext().spanId);
    expect(stored).toBe(`00-${TRACE}-${inner?.spanContext().spanId}-01`);
    expect(t.traceparent()).toBeUndefined();
    // an error marks the span failed by its kind, never its message
    await expect(t.inSpan('failing', { parent: null }, () => Promise.reject(new TypeError('to +14155550100')))).rejects.toThrow();
    const failing = exporter.getFinishedSpans().find((s) => s.name === 'failing');
    expect(failing?.parentSpanContext).toBeUndefined();
    expect(failing?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'TypeError' });
    expect(JSON.stringify(failing?.attributes)).not.toContain('4155550100');
    await provider.shutdown();
  });
});
