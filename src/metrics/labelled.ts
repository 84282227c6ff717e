/**
 * Metrics whose label values are declared with the metric: a label is either a closed list
 * (`as const`, the only values `inc`/`set` accept) or an open set described in words (route
 * templates, error codes). The declaration rides on the prom-client object as
 * `allowedLabelValues`, where docs/operating.md's generated table reads it.
 */
import client from 'prom-client';

/** A label's values: the closed list, or what an open one holds. */
export type LabelSpec = readonly string[] | { readonly open: string };
export type LabelSpecs = Readonly<Record<string, LabelSpec>>;

/** The labels a metric accepts: a listed value for a closed label, any string for an open one. */
export type LabelValuesOf<L extends LabelSpecs> = { [K in keyof L]: L[K] extends readonly (infer V extends string)[] ? V : string };

type Names<L extends LabelSpecs> = keyof L & string;

interface Declared<L extends LabelSpecs> {
  readonly allowedLabelValues: L;
}

export interface LabelledCounter<L extends LabelSpecs> extends Omit<client.Counter<Names<L>>, 'inc'>, Declared<L> {
  inc(labels: LabelValuesOf<L>, value?: number): void;
}

export interface LabelledGauge<L extends LabelSpecs> extends Omit<client.Gauge<Names<L>>, 'inc' | 'dec' | 'set'>, Declared<L> {
  inc(labels: LabelValuesOf<L>, value?: number): void;
  dec(labels: LabelValuesOf<L>, value?: number): void;
  set(labels: LabelValuesOf<L>, value: number): void;
}

export interface LabelledHistogram<L extends LabelSpecs> extends Omit<client.Histogram<Names<L>>, 'observe'>, Declared<L> {
  observe(labels: LabelValuesOf<L>, value: number): void;
}

interface Spec<L extends LabelSpecs, M> {
  name: string;
  help: string;
  labels: L;
  registers: client.Registry[];
  collect?: (this: M) => void | Promise<void>;
}

const names = <L extends LabelSpecs>(labels: L) => Object.keys(labels) as Names<L>[];

export function labelledCounter<const L extends LabelSpecs>(spec: Spec<L, client.Counter<Names<L>>>): LabelledCounter<L> {
  const { labels, ...rest } = spec;
  return Object.assign(new client.Counter({ ...rest, labelNames: names(labels) }), { allowedLabelValues: labels });
}

export function labelledGauge<const L extends LabelSpecs>(spec: Spec<L, client.Gauge<Names<L>>>): LabelledGauge<L> {
  const { labels, ...rest } = spec;
  return Object.assign(new client.Gauge({ ...rest, labelNames: names(labels) }), { allowedLabelValues: labels });
}

export function labelledHistogram<const L extends LabelSpecs>(
  spec: Spec<L, client.Histogram<Names<L>>> & { buckets: number[] },
): LabelledHistogram<L> {
  const { labels, ...rest } = spec;
  return Object.assign(new client.Histogram({ ...rest, labelNames: names(labels) }), { allowedLabelValues: labels });
}

/** Every listed value of one closed label at 0, so alerts and rates see the series before its first event. */
export function zeroSeries<K extends string>(
  counter: {
    readonly allowedLabelValues: Readonly<Record<K, readonly string[]>>;
    labels(labels: Partial<Record<K, string>>): { inc(value: number): void };
  },
  label: K,
): void {
  for (const value of counter.allowedLabelValues[label]) {
    const labels: Partial<Record<K, string>> = {};
    labels[label] = value;
    counter.labels(labels).inc(0);
  }
}

/** The declaration a registered metric carries, if it was made here. */
export function allowedLabelValues(metric: unknown): LabelSpecs | undefined {
  if (typeof metric !== 'object' || metric === null || !('allowedLabelValues' in metric)) return undefined;
  return metric.allowedLabelValues as LabelSpecs;
}
