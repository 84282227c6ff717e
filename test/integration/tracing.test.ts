/**
 * One trace across the handoff: a real embedded Vigil (ticks running, the real Twilio client
 * against the local fake) traces into an in-memory exporter given through `startVigil`'s
 * overrides. The mobile app's `traceparent` on the arm request is continued by the request
 * span, the escalation a later sweep runs, each SMS send and the Twilio call inside it;
 * no span carries a phone number, a message body or coordinates. With OTLP configured the
 * spans reach a collector over HTTP; with tracing off nothing is sent and no global is set.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeTwilio } from '../helpers/fake-twilio.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';
import { incidentOf, twilioEnv } from './sms-support.js';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const parentId = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const id = (s: ReadableSpan) => s.spanContext().spanId;

describe('tracing into an in-memory exporter', () => {
  let tw: FakeTwilio;
  let v: TestVigil;
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  /** the timer the first case lets run out */
  let expiredTimer = '';

  beforeAll(async () => {
    tw = await FakeTwilio.start();
    v = await startTestVigil(twilioEnv(tw), { tracerProvider: provider });
  });
  afterAll(async () => {
    await v?.stop();
    await tw?.close();
    await provider.shutdown();
  });

  it('the request that armed a timer, its escalation, each SMS send and each Twilio call share the incoming trace, parent to child; invariant 7: no span carries a phone, a body or coordinates', async () => {
    const phones = ['+14155550181', '+14155550182'];
    const place = 'Ritual Coffee, Valencia St';
    const where = { lat: 37.75648, lng: -122.42133 };
    const traceId = hex(16);
    const appSpanId = hex(8);

    const token = v.token('tara', { name: 'Tara Quinn' });
    const c = await v.api(token, 'PUT', '/v1/me/contacts', { contacts: phones.map((phone, i) => ({ name: `Contact ${i + 1}`, phone })) });
    expect(c.status).toBe(200);
    const armed = await v.api(
      token,
      'POST',
      '/v1/timers',
      { durationSeconds: 1, locationName: place, location: where },
      { traceparent: `00-${traceId}-${appSpanId}-01` },
    );
    expect(armed.status).toBe(201);
    const timerId = armed.body.timer.id as string;
    expiredTimer = timerId;

    // the ticks expire it, escalate it and send both texts
    const inc = await eventually(async () => {
      const i = await incidentOf(v, timerId);
      return i.deliveries.length === phones.length && i.deliveries.every((d) => d.status === 'sent') ? i : undefined;
    }, 'both SOS texts sent');
    const spans = await eventually(async () => {
      const mine = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
      return mine.filter((s) => s.name === 'vigil.sms.send').length >= phones.length ? mine : undefined;
    }, 'the send spans exported');

    const request = spans.filter((s) => s.name === 'POST /v1/timers');
    expect(request).toHaveLength(1);
    const req = request[0]!;
    expect(req.kind).toBe(SpanKind.SERVER);
    expect(parentId(req)).toBe(appSpanId);
    expect(req.attributes).toMatchObject({ 'http.route': '/v1/timers', 'http.response.status_code': 201 });

    const escalations = spans.filter((s) => s.name === 'vigil.escalate');
    expect(escalations).toHaveLength(1);
    const esc = escalations[0]!;
    expect(parentId(esc)).toBe(id(req));
    expect(esc.attributes['vigil.timer.id']).toBe(timerId);

    const sends = spans.filter((s) => s.name === 'vigil.sms.send');
    expect(sends).toHaveLength(phones.length);
    expect(sends.map((s) => s.attributes['vigil.delivery.key']).sort()).toEqual(inc.deliveries.map((d) => d.key).sort());
    for (const send of sends) {
      expect(parentId(send)).toBe(id(esc));
      expect(send.attributes['vigil.delivery.outcome']).toBe('sent');
      const calls = spans.filter((s) => parentId(s) === id(send));
      expect(calls.map((s) => [s.name, s.kind])).toEqual([['twilio POST Messages', SpanKind.CLIENT]]);
      expect(calls[0]!.attributes['http.response.status_code']).toBe(201);
    }

    // nothing personal in any span this Vigil exported: names, attributes, event attributes
    const bodies = tw.accepted.filter((m) => phones.includes(m.to)).map((m) => m.body);
    expect(bodies).toHaveLength(phones.length);
    const secrets = [
      ...phones,
      ...phones.map((p) => p.slice(1)),
      ...phones.map((p) => p.slice(-7)),
      ...bodies,
      place,
      'Tara Quinn',
      '37.756',
      '122.421',
      tw.accountSid,
    ];
    const everything = exporter
      .getFinishedSpans()
      .flatMap((s) => [
        s.name,
        ...Object.values(s.attributes).map(String),
        ...s.events.flatMap((e) => [e.name, ...Object.values(e.attributes ?? {}).map(String)]),
      ]);
    expect(everything.length).toBeGreaterThan(0);
    for (const secret of secrets) expect(everything.filter((text) => text.includes(secret))).toEqual([]);
  });

  it("the all-clear texts continue the trace of the I'm-safe request that queued them", async () => {
    const traceId = hex(16);
    const safe = await v.api(v.token('tara', { name: 'Tara Quinn' }), 'POST', `/v1/timers/${expiredTimer}/safe`, undefined, {
      traceparent: `00-${traceId}-${hex(8)}-01`,
    });
    expect(safe.status).toBe(200);
    expect(safe.body.incident.status).toBe('false_alarm');
    const spans = await eventually(async () => {
      const mine = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
      return mine.filter((s) => s.name === 'vigil.sms.send').length >= 2 ? mine : undefined;
    }, 'the all-clear send spans');
    const req = spans.find((s) => s.name === 'POST /v1/timers/:id/safe');
    expect(req).toBeDefined();
    const sends = spans.filter((s) => s.name === 'vigil.sms.send');
    expect(sends).toHaveLength(2);
    for (const send of sends) {
      expect(send.attributes['vigil.delivery.kind']).toBe('all_clear');
      expect(parentId(send)).toBe(id(req!));
    }
  });

  it('a request without a traceparent starts a new trace that its escalation continues', async () => {
    const token = v.token('uma');
    expect((await v.api(token, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Contact', phone: '+14155550183' }] })).status).toBe(200);
    const armed = await v.api(token, 'POST', '/v1/timers', { durationSeconds: 1 });
    expect(armed.status).toBe(201);
    const timerId = armed.body.timer.id as string;
    const esc = await eventually(
      async () => exporter.getFinishedSpans().find((s) => s.name === 'vigil.escalate' && s.attributes['vigil.timer.id'] === timerId),
      'the escalation span',
    );
    const req = exporter.getFinishedSpans().find((s) => s.name === 'POST /v1/timers' && id(s) === parentId(esc));
    expect(req).toBeDefined();
    expect(req!.parentSpanContext).toBeUndefined();
    expect(req!.spanContext().traceId).toBe(esc.spanContext().traceId);
  });
});

/** A stand-in OTLP/HTTP collector: records every request body. */
async function collector(): Promise<{ url: string; bodies: string[]; close(): Promise<void> }> {
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(`${req.method} ${req.url} ${Buffer.concat(chunks).toString('utf8')}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('tracing from configuration', () => {
  let col: Awaited<ReturnType<typeof collector>>;
  beforeAll(async () => {
    col = await collector();
  });
  afterAll(async () => {
    await col?.close();
  });

  const armOnce = async (v: TestVigil, traceId: string) => {
    const r = await v.api(
      v.token(`user-${hex(4)}`),
      'POST',
      '/v1/timers',
      { durationSeconds: 600 },
      { traceparent: `00-${traceId}-${hex(8)}-01` },
    );
    expect(r.status).toBe(201);
    return r.body.timer.id as string;
  };

  it('with OTEL_EXPORTER_OTLP_ENDPOINT set, spans reach the collector over OTLP/HTTP by the time Vigil has stopped, naming service and replica', async () => {
    const v = await startTestVigil(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: col.url,
        OTEL_EXPORTER_OTLP_HEADERS: 'x-team=safety',
        OTEL_SERVICE_NAME: 'vigil-test',
        REPLICA_ID: 'replica-7',
      },
      { manualTicks: true },
    );
    const traceId = hex(16);
    const timerId = await armOnce(v, traceId);
    expect((await v.vigil.store.getTimer(timerId))?.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    await v.stop();
    const exported = col.bodies.filter((b) => b.startsWith('POST /v1/traces '));
    expect(exported.length).toBeGreaterThan(0);
    expect(exported.some((b) => b.includes(traceId) && b.includes('POST /v1/timers'))).toBe(true);
    // the resource of the batch: OTLP/JSON writes attributes as {"key":…,"value":{"stringValue":…}}
    const withSpan = exported.find((b) => b.includes(traceId)) ?? '';
    expect(withSpan).toContain('{"key":"service.name","value":{"stringValue":"vigil-test"}}');
    expect(withSpan).toContain('{"key":"service.instance.id","value":{"stringValue":"replica-7"}}');
  });

  it('with tracing off (the default) nothing is exported, no traceparent is stored and no OTel global is registered', async () => {
    const before = col.bodies.length;
    // the endpoint is set but the exporter is off: proves the switch, not just a missing URL
    const v = await startTestVigil({ OTEL_EXPORTER_OTLP_ENDPOINT: col.url, OTEL_TRACES_EXPORTER: 'none' }, { manualTicks: true });
    const timerId = await armOnce(v, hex(16));
    const timer = await v.vigil.store.getTimer(timerId);
    expect(timer).not.toBeNull();
    expect(timer).not.toHaveProperty('traceparent');
    await v.stop();
    expect(col.bodies.slice(before)).toEqual([]);
    expect(trace.getTracer('probe').startSpan('probe').isRecording()).toBe(false);
  });
});
