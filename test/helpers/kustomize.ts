/**
 * A small `kustomize build` for tests (no kustomize binary here): exactly the features
 * k8s/kustomization.yaml uses — `resources` (files), `configMapGenerator` (`envs`, `literals`,
 * `options.labels`) with a content-hash name suffix that the pod templates' references
 * follow, `labels` (pairs, without selectors), and `images`. Any other key fails the build,
 * so using a new kustomize feature makes the tests say so instead of checking the wrong thing.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';

export interface KObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; [k: string]: unknown };
  [k: string]: unknown;
}

interface Kustomization {
  resources?: string[];
  configMapGenerator?: { name: string; envs?: string[]; literals?: string[]; options?: { labels?: Record<string, string> } }[];
  labels?: { pairs: Record<string, string>; includeSelectors?: boolean; includeTemplates?: boolean }[];
  images?: { name: string; newName?: string; newTag?: string; digest?: string }[];
}
const KNOWN = new Set(['apiVersion', 'kind', 'resources', 'configMapGenerator', 'labels', 'images']);

/** `KEY=value` lines; `#` comments and blank lines skipped; the value is taken literally (kustomize's env file rules). */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.replace(/^\s+/, '');
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`env file line without KEY=value: ${raw}`);
    const key = line.slice(0, eq);
    if (!/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(key)) throw new Error(`not an environment variable name: ${key}`);
    out[key] = line.slice(eq + 1);
  }
  return out;
}

const sortKeys = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(sortKeys)
    : v && typeof v === 'object'
      ? Object.fromEntries(
          Object.entries(v)
            .sort(([a], [b]) => (a < b ? -1 : 1))
            .map(([k, x]) => [k, sortKeys(x)]),
        )
      : v;

/** kustomize's name suffix: sha256 of the sorted JSON of kind, name and data; 10 hex digits, some letters swapped. */
export function configMapHash(name: string, data: Record<string, string>): string {
  const hex = createHash('sha256')
    .update(JSON.stringify(sortKeys({ kind: 'ConfigMap', name, data })))
    .digest('hex');
  const swap: Record<string, string> = { '0': 'g', '1': 'h', '3': 'k', a: 'm', e: 't' };
  return [...hex.slice(0, 10)].map((c) => swap[c] ?? c).join('');
}

interface PodSpecLike {
  containers?: ContainerLike[];
  initContainers?: ContainerLike[];
  volumes?: { configMap?: { name?: string }; projected?: { sources?: { configMap?: { name?: string } }[] } }[];
}
interface ContainerLike {
  image?: string;
  envFrom?: { configMapRef?: { name?: string } }[];
  env?: { valueFrom?: { configMapKeyRef?: { name?: string } } }[];
}

function podSpecOf(o: KObject): PodSpecLike | undefined {
  const spec = o.spec as { template?: { spec?: PodSpecLike }; jobTemplate?: { spec?: { template?: { spec?: PodSpecLike } } } } | undefined;
  return spec?.template?.spec ?? spec?.jobTemplate?.spec?.template?.spec;
}

/** Every object `kubectl apply -k dir` would send, in kustomize's order of appearance. */
export function kustomizeBuild(dir: string): KObject[] {
  const k = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
  const unknown = Object.keys(k).filter((key) => !KNOWN.has(key));
  if (unknown.length > 0) throw new Error(`kustomizeBuild does not implement ${unknown.join(', ')}`);

  const objects: KObject[] = [];
  for (const file of k.resources ?? []) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
      const o = doc.toJS() as KObject | null;
      if (o) objects.push(o);
    }
  }

  const renamed = new Map<string, string>();
  for (const g of k.configMapGenerator ?? []) {
    const data: Record<string, string> = {};
    for (const env of g.envs ?? []) Object.assign(data, parseEnvFile(readFileSync(join(dir, env), 'utf8')));
    for (const lit of g.literals ?? []) Object.assign(data, parseEnvFile(lit));
    const name = `${g.name}-${configMapHash(g.name, data)}`;
    renamed.set(g.name, name);
    objects.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, ...(g.options?.labels ? { labels: { ...g.options.labels } } : {}) },
      data,
    });
  }

  const rename = (ref: { name?: string } | undefined) => {
    if (ref?.name && renamed.has(ref.name)) ref.name = renamed.get(ref.name);
  };
  for (const o of objects) {
    const pod = podSpecOf(o);
    if (!pod) continue;
    for (const c of [...(pod.containers ?? []), ...(pod.initContainers ?? [])]) {
      for (const e of c.envFrom ?? []) rename(e.configMapRef);
      for (const e of c.env ?? []) rename(e.valueFrom?.configMapKeyRef);
      for (const img of k.images ?? []) {
        const [name, tag] = splitImage(c.image ?? '');
        if (name !== img.name) continue;
        const newName = img.newName ?? name;
        c.image = img.digest ? `${newName}@${img.digest}` : `${newName}${img.newTag ? `:${img.newTag}` : tag ? `:${tag}` : ''}`;
      }
    }
    for (const v of pod.volumes ?? []) {
      rename(v.configMap);
      for (const s of v.projected?.sources ?? []) rename(s.configMap);
    }
  }

  for (const l of k.labels ?? []) {
    if (l.includeSelectors || l.includeTemplates) throw new Error('kustomizeBuild does not implement labels into selectors or templates');
    for (const o of objects) o.metadata.labels = { ...o.metadata.labels, ...l.pairs };
  }
  return objects;
}

function splitImage(image: string): [string, string | undefined] {
  const at = image.indexOf('@');
  if (at >= 0) return [image.slice(0, at), undefined];
  const colon = image.lastIndexOf(':');
  return colon > image.lastIndexOf('/') ? [image.slice(0, colon), image.slice(colon + 1)] : [image, undefined];
}
