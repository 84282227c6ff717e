/**
 * The tracer provider `TracingConfig` asks for: none when tracing is off (every span call
 * is then a no-op), else OTLP/HTTP through a batch processor. Spans continue the sampling
 * decision of an incoming traceparent and sample every new trace. Every span names the
 * service (`service.name`, OTEL_SERVICE_NAME) and the replica (`service.instance.id`).
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler } from '@opentelemetry/sdk-trace-base';
import type { TracingConfig } from '../config.js';

export function tracerProviderFor(config: TracingConfig): BasicTracerProvider | undefined {
  if (config.exporter === 'none') return undefined;
  const exporter = new OTLPTraceExporter({ url: config.url, headers: config.headers, timeoutMillis: config.timeoutMs });
  return new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName, 'service.instance.id': config.instanceId }),
    sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
}
