/**
 * Deployment artefacts agree with each other and with the code: every manifest parses,
 * probes hit real routes on real ports, names and labels line up, the pod and the image
 * run as non-root, the grace period covers the shutdown, every alert has a runbook and
 * every metric in alerts and the dashboard exists in src/metrics.ts.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { EnvSchema, loadConfig } from '../../src/config.js';
import { makeLimits } from '../../src/domain/limits.js';
import { openapiDocument } from '../../src/http/openapi.js';
import { createMetrics } from '../../src/metrics.js';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { configMapHash, kustomizeBuild, parseEnvFile, type KObject } from '../helpers/kustomize.js';
import { markdownAnchors, metricExists, parseDockerfile, promqlMetricNames } from '../helpers/ops.js';

const ROOT = join(import.meta.dirname, '..', '..');
const K8S = join(ROOT, 'k8s');
const read = (...p: string[]) => readFileSync(join(ROOT, ...p), 'utf8');

type Labels = Record<string, string>;
interface Probe {
  httpGet?: { path?: string; port?: string | number };
}
interface Container {
  name: string;
  image?: string;
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath?: string } } }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command?: string[] }; sleep?: { seconds?: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[] };
  };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface K8sObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; labels?: Labels };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: {
    replicas?: number;
    selector?: { matchLabels?: Labels } & Labels;
    template?: {
      metadata?: { labels?: Labels };
      spec?: {
        terminationGracePeriodSeconds?: number;
        securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type?: string } };
        containers?: Container[];
        volumes?: { name: string; emptyDir?: object }[];
        topologySpreadConstraints?: { topologyKey: string; labelSelector?: { matchLabels?: Labels } }[];
      };
    };
    ports?: { name?: string; port: number; targetPort?: string | number }[];
    endpoints?: { port?: string; path?: string }[];
    scaleTargetRef?: { apiVersion?: string; kind?: string; name?: string };
    minReplicas?: number;
    maxReplicas?: number;
    minAvailable?: number | string;
    groups?: { name: string; rules: { alert?: string; expr: string; labels?: Labels; annotations?: Labels }[] }[];
  };
  resources?: string[];
}

function loadManifests(file: string): K8sObject[] {
  const docs = parseAllDocuments(readFileSync(join(K8S, file), 'utf8'));
  const list = Array.isArray(docs) ? docs : [docs];
  for (const d of list)
    expect(
      d.errors.map((e) => e.message),
      `${file} parses`,
    ).toEqual([]);
  return list.map((d) => d.toJS() as K8sObject).filter((o) => o !== null);
}

const files = readdirSync(K8S).filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'));
const all = new Map(files.map((f) => [f, loadManifests(f)]));
const one = (file: string, kind: string): K8sObject => {
  const found = (all.get(file) ?? []).filter((o) => o.kind === kind);
  expect(found, `${file} holds one ${kind}`).toHaveLength(1);
  return found[0] as K8sObject;
};
const subset = (sub: Labels | undefined, sup: Labels | undefined) =>
  Object.keys(sub ?? {}).length > 0 && Object.entries(sub ?? {}).every(([k, v]) => sup?.[k] === v);

const deployment = one('deployment.yaml', 'Deployment');
const podSpec = deployment.spec?.template?.spec ?? {};
const podLabels = deployment.spec?.template?.metadata?.labels;
const container = (podSpec.containers ?? [])[0] as Container;
const service = one('service.yaml', 'Service');
// what `kubectl apply -k k8s/` sends: the generated ConfigMap, hashed names, labels, images
const built = kustomizeBuild(K8S);
const builtOne = (kind: string, name?: string): K8sObject => {
  const found = built.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  expect(found, `kustomize build holds one ${kind} ${name ?? ''}`).toHaveLength(1);
  return found[0] as K8sObject;
};
const configMap = (() => {
  const found = built.filter((o) => o.kind === 'ConfigMap' && /^vigil-config-[a-z0-9]{10}$/.test(o.metadata.name));
  expect(found, 'one generated vigil-config-<hash> ConfigMap').toHaveLength(1);
  return found[0] as K8sObject;
})();
const builtContainer = (builtOne('Deployment', 'vigil').spec?.template?.spec?.containers ?? [])[0] as Container;
const secret = one('secret.example.yaml', 'Secret');
const rule = one('prometheusrule.yaml', 'PrometheusRule');
const doc = openapiDocument(makeLimits(loadConfig({}).limits));

const knownMetrics = (() => {
  const names = new Set([...read('src', 'metrics.ts').matchAll(/name: '(vigil_\w+)'/g)].map((m) => m[1] ?? ''));
  const m = createMetrics({ replica: 'manifests-test' });
  for (const metric of m.registry.getMetricsAsArray()) names.add(metric.name); // includes the default process metrics
  return names;
})();
const isKnownMetric = (name: string) => name === 'up' || name.startsWith('kube_') || metricExists(name, knownMetrics);

describe('manifests', () => {
  it('every file parses into named Kubernetes objects, and kustomization lists all but the secret template', () => {
    for (const [file, objects] of all) {
      expect(objects.length, file).toBeGreaterThan(0);
      for (const o of objects) {
        expect(o.apiVersion, file).toBeTruthy();
        expect(o.kind, file).toBeTruthy();
        if (o.kind !== 'Kustomization') expect(o.metadata?.name, file).toBeTruthy();
      }
    }
    const k = one('kustomization.yaml', 'Kustomization');
    for (const r of k.resources ?? []) expect(existsSync(join(K8S, r)), `kustomization resource ${r}`).toBe(true);
    const expected = files.filter((f) => f !== 'kustomization.yaml' && f !== 'secret.example.yaml').sort();
    expect([...(k.resources ?? [])].sort()).toEqual(expected);
  });

  it('Deployment: no replica count beside the HPA, selector matches its pods, probes on real routes and named ports', () => {
    // `kubectl apply -k` would reset the HPA's count to this value and drop the removed pods' sockets
    expect(deployment.spec?.replicas, 'the HPA owns the replica count').toBeUndefined();
    expect(subset(deployment.spec?.selector?.matchLabels, podLabels)).toBe(true);
    const portNames = (container.ports ?? []).map((p) => p.name);
    const probes = { startupProbe: '/livez', livenessProbe: '/livez', readinessProbe: '/readyz' } as const;
    for (const [probe, path] of Object.entries(probes) as [keyof typeof probes, string][]) {
      const get = container[probe]?.httpGet;
      expect(get?.path, probe).toBe(path);
      expect(doc.paths[get?.path ?? '']?.get, `${probe} path is a described GET route`).toBeDefined();
      expect(portNames, `${probe} port`).toContain(get?.port);
    }
  });

  it('Deployment: env from the generated ConfigMap and the Secret, REPLICA_ID from the pod name', () => {
    const from = builtContainer.envFrom ?? [];
    expect(from.map((e) => e.configMapRef?.name).filter(Boolean)).toEqual([configMap.metadata?.name]);
    expect(from.map((e) => e.secretRef?.name).filter(Boolean)).toEqual([secret.metadata?.name]);
    const replica = (container.env ?? []).find((e) => e.name === 'REPLICA_ID');
    expect(replica?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.name');
    expect(Number(configMap.data?.PORT)).toBe(container.ports?.find((p) => p.name === 'http')?.containerPort);
    // the scrape has its own listener, the container port `metrics`
    expect(Number(configMap.data?.METRICS_PORT)).toBe(container.ports?.find((p) => p.name === 'metrics')?.containerPort);
  });

  it('Deployment: non-root, read-only root filesystem, no privileges, writable /tmp, resources, spread', () => {
    const pod = podSpec.securityContext ?? {};
    const c = container.securityContext ?? {};
    expect(pod.runAsNonRoot ?? c.runAsNonRoot).toBe(true);
    for (const uid of [pod.runAsUser, c.runAsUser].filter((u) => u !== undefined)) expect(uid).not.toBe(0);
    expect(c.readOnlyRootFilesystem).toBe(true);
    expect(c.allowPrivilegeEscalation).toBe(false);
    expect(c.capabilities?.drop).toContain('ALL');
    expect(pod.seccompProfile?.type).toBe('RuntimeDefault');
    const tmp = (container.volumeMounts ?? []).find((v) => v.mountPath === '/tmp');
    expect(podSpec.volumes?.find((v) => v.name === tmp?.name)?.emptyDir).toBeDefined();
    for (const kind of ['requests', 'limits'] as const) {
      expect(container.resources?.[kind]?.cpu, kind).toBeTruthy();
      expect(container.resources?.[kind]?.memory, kind).toBeTruthy();
    }
    const spread = podSpec.topologySpreadConstraints ?? [];
    expect(spread.map((s) => s.topologyKey).sort()).toEqual(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
    for (const s of spread) expect(subset(s.labelSelector?.matchLabels, podLabels)).toBe(true);
  });

  it('Deployment: the grace period outlasts preStop + SHUTDOWN_TIMEOUT_MS', () => {
    const preStop = container.lifecycle?.preStop;
    const cmd = preStop?.exec?.command ?? [];
    const preStopSeconds = preStop?.sleep?.seconds ?? (cmd[0] === 'sleep' ? Number(cmd[1]) : NaN);
    expect(preStopSeconds).toBeGreaterThan(0);
    const shutdownSeconds = Number(configMap.data?.SHUTDOWN_TIMEOUT_MS ?? EnvSchema.shape.SHUTDOWN_TIMEOUT_MS.parse(undefined)) / 1000;
    expect(podSpec.terminationGracePeriodSeconds ?? 30).toBeGreaterThan(preStopSeconds + shutdownSeconds);
  });

  it('ConfigMap: every key is a Vigil setting and the values validate', () => {
    const data = configMap.data ?? {};
    const known = new Set([...Object.keys(EnvSchema.shape), 'NODE_OPTIONS']);
    expect(Object.keys(data).filter((k) => !known.has(k))).toEqual([]);
    const parsed = EnvSchema.safeParse(data);
    expect(parsed.success, parsed.success ? '' : parsed.error.message).toBe(true);
  });

  it('Secret template: placeholders only, and the keys cluster mode needs', () => {
    const values = { ...secret.data, ...secret.stringData };
    expect(Object.keys(values)).toEqual(expect.arrayContaining(['JWT_SECRET', 'MONGODB_URI', 'REDIS_URL']));
    for (const [k, v] of Object.entries(values)) expect(/REPLACE|changeme/i.test(v), `${k} is a placeholder`).toBe(true);
  });

  it('Service targets the pods on the container port name; ServiceMonitor selects the Service and its port', () => {
    expect(subset(service.spec?.selector, podLabels)).toBe(true);
    const containerPorts = (container.ports ?? []).map((p) => p.name);
    for (const p of service.spec?.ports ?? []) expect(containerPorts).toContain(p.targetPort);
    const sm = one('servicemonitor.yaml', 'ServiceMonitor');
    expect(sm.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(subset(sm.spec?.selector?.matchLabels, service.metadata?.labels)).toBe(true);
    const servicePorts = (service.spec?.ports ?? []).map((p) => p.name);
    for (const e of sm.spec?.endpoints ?? []) {
      expect(servicePorts).toContain(e.port);
      expect(doc.paths[e.path ?? '']?.get).toBeDefined();
    }
    expect(sm.spec?.endpoints?.[0]?.path).toBe('/metrics');
    // scraped on the metrics listener, never on the API's port that the ingress routes to
    for (const e of sm.spec?.endpoints ?? []) {
      const target = service.spec?.ports?.find((p) => p.name === e.port)?.targetPort;
      expect(target, `ServiceMonitor port ${e.port ?? ''}`).toBe('metrics');
    }
    // and the probes stay on the API's port, where /livez and /readyz are served
    for (const probe of [container.startupProbe, container.livenessProbe, container.readinessProbe])
      expect(probe?.httpGet?.port).toBe('http');
  });

  it('HPA and PDB target the Deployment', () => {
    const hpa = one('hpa.yaml', 'HorizontalPodAutoscaler');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(hpa.spec?.scaleTargetRef).toMatchObject({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata?.name });
    expect(hpa.spec?.minReplicas).toBeGreaterThanOrEqual(3);
    expect(hpa.spec?.maxReplicas).toBeGreaterThanOrEqual(hpa.spec?.minReplicas ?? Infinity);
    const pdb = one('pdb.yaml', 'PodDisruptionBudget');
    expect(subset(pdb.spec?.selector?.matchLabels, podLabels)).toBe(true);
    expect(pdb.spec?.minAvailable).toBe(2);
    expect(Number(pdb.spec?.minAvailable)).toBeLessThan(hpa.spec?.minReplicas ?? 0);
  });
});

describe('kustomize build, validated against the Kubernetes types', () => {
  const VALIDATORS: Record<string, (o: KObject) => { validate(): void }> = {
    'v1/ConfigMap': (o) => new ConfigMap(o as ConstructorParameters<typeof ConfigMap>[0]),
    'v1/Service': (o) => new Service(o as ConstructorParameters<typeof Service>[0]),
    'apps/v1/Deployment': (o) => new Deployment(o as ConstructorParameters<typeof Deployment>[0]),
    'autoscaling/v2/HorizontalPodAutoscaler': (o) =>
      new HorizontalPodAutoscaler(o as ConstructorParameters<typeof HorizontalPodAutoscaler>[0]),
    'policy/v1/PodDisruptionBudget': (o) => new PodDisruptionBudget(o as ConstructorParameters<typeof PodDisruptionBudget>[0]),
  };
  const CRDS = new Set(['monitoring.coreos.com/v1/PrometheusRule', 'monitoring.coreos.com/v1/ServiceMonitor']);
  const DNS1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
  const DURATION = /^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$/;
  const stringMap = (v: unknown) =>
    v === undefined || (typeof v === 'object' && v !== null && Object.values(v).every((x) => typeof x === 'string'));

  it('builds the objects apply -k sends, each with a valid name and the managed-by label', () => {
    expect(built.map((o) => `${o.kind}/${o.metadata.name.replace(/-[a-z0-9]{10}$/, '-<hash>')}`).sort()).toEqual(
      [
        'ConfigMap/vigil-config-<hash>',
        'ConfigMap/vigil-grafana-dashboard',
        'Deployment/vigil',
        'HorizontalPodAutoscaler/vigil',
        'PodDisruptionBudget/vigil',
        'PrometheusRule/vigil',
        'Service/vigil',
        'ServiceMonitor/vigil',
      ].sort(),
    );
    for (const o of built) {
      expect(o.metadata.name, o.kind).toMatch(DNS1123);
      expect(o.metadata.labels?.['app.kubernetes.io/managed-by'], o.kind).toBe('kustomize');
    }
  });

  it('every built-in object passes its kubernetes-models validation; only known CRDs remain', () => {
    for (const o of built) {
      const key = `${o.apiVersion}/${o.kind}`;
      const make = VALIDATORS[key];
      if (!make) {
        expect(CRDS.has(key), `${key} has a validator`).toBe(true);
        continue;
      }
      expect(() => make(o).validate(), `${key} ${o.metadata.name}`).not.toThrow();
    }
  });

  it('the validation can fail: a string replica count and a non-string ConfigMap value are refused', () => {
    const d = structuredClone(builtOne('Deployment', 'vigil')) as KObject & { spec: { replicas?: unknown } };
    d.spec.replicas = 'three';
    expect(() => new Deployment(d as unknown as ConstructorParameters<typeof Deployment>[0]).validate()).toThrow(/replicas/);
    const cm = { ...configMap, data: { PORT: 3000 } };
    expect(() => new ConfigMap(cm as unknown as ConstructorParameters<typeof ConfigMap>[0]).validate()).toThrow(/data/);
  });

  it('PrometheusRule: groups of alerts with an expression, a duration, and string labels and annotations', () => {
    const pr = builtOne('PrometheusRule') as K8sObject & { spec: { groups: Record<string, unknown>[] } };
    expect(Object.keys(pr.spec)).toEqual(['groups']);
    expect(pr.spec.groups.length).toBeGreaterThan(0);
    const names = new Set<string>();
    for (const g of pr.spec.groups) {
      expect(
        Object.keys(g).every((k) => ['name', 'interval', 'rules', 'partial_response_strategy', 'limit'].includes(k)),
        JSON.stringify(Object.keys(g)),
      ).toBe(true);
      expect(typeof g.name).toBe('string');
      expect(names.has(String(g.name)), `group ${String(g.name)} is unique`).toBe(false);
      names.add(String(g.name));
      for (const r of g.rules as Record<string, unknown>[]) {
        expect(
          Object.keys(r).every((k) => ['alert', 'record', 'expr', 'for', 'keep_firing_for', 'labels', 'annotations'].includes(k)),
          JSON.stringify(r),
        ).toBe(true);
        expect(typeof r.alert === 'string' || typeof r.record === 'string').toBe(true);
        expect(typeof r.expr === 'string' && r.expr.trim() !== '').toBe(true);
        if (r.for !== undefined) expect(String(r.for)).toMatch(DURATION);
        expect(stringMap(r.labels) && stringMap(r.annotations), String(r.alert)).toBe(true);
      }
    }
  });

  it('ServiceMonitor: a label selector and endpoints with a port, a path and durations', () => {
    const sm = builtOne('ServiceMonitor') as K8sObject & {
      spec: { selector: { matchLabels: unknown }; endpoints: Record<string, unknown>[] };
    };
    expect(stringMap(sm.spec.selector.matchLabels)).toBe(true);
    expect(sm.spec.endpoints.length).toBeGreaterThan(0);
    for (const e of sm.spec.endpoints) {
      expect(
        Object.keys(e).every((k) =>
          ['port', 'path', 'interval', 'scrapeTimeout', 'scheme', 'honorLabels', 'relabelings', 'metricRelabelings'].includes(k),
        ),
      ).toBe(true);
      expect(typeof e.port).toBe('string');
      expect(String(e.path)).toMatch(/^\//);
      for (const d of [e.interval, e.scrapeTimeout]) if (d !== undefined) expect(String(d)).toMatch(DURATION);
    }
  });

  it('the generated ConfigMap is the env file, and its name follows the content so a change rolls the pods', () => {
    const env = parseEnvFile(read('k8s', 'vigil-config.env'));
    expect(configMap.data).toEqual(env);
    expect(configMap.metadata?.name).toBe(`vigil-config-${configMapHash('vigil-config', env)}`);
    expect(configMapHash('vigil-config', { ...env, LOG_LEVEL: 'debug' })).not.toBe(configMapHash('vigil-config', env));
    // the pod template points at the hashed name: a new name is a new template, hence a rollout
    expect((builtContainer.envFrom ?? []).map((e) => e.configMapRef?.name).filter(Boolean)).toEqual([configMap.metadata?.name]);
    expect(builtContainer.image).toBe('vigil:0.1.0');
  });
});

describe('alerts and dashboard', () => {
  const rules = (rule.spec?.groups ?? []).flatMap((g) => g.rules).filter((r) => r.alert);

  it('has the alerts the on-call needs, each with a severity, a summary and a runbook section', () => {
    const names = rules.map((r) => r.alert);
    expect(names).toEqual(
      expect.arrayContaining([
        'VigilTimersOverdue',
        'VigilNoSuccessfulSweep',
        'VigilLockErrors',
        'VigilDeliveryFailureRatio',
        'VigilDeadLetters',
        'VigilHigh5xxRatio',
        'VigilNoReadyReplicas',
      ]),
    );
    const anchors = markdownAnchors(read('docs', 'runbooks.md'));
    for (const r of rules) {
      expect(r.labels?.severity, r.alert).toMatch(/^(critical|warning|info)$/);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      const anchor = /docs\/runbooks\.md#([\w-]+)$/.exec(r.annotations?.runbook_url ?? '')?.[1];
      expect(anchor && anchors.has(anchor), `${r.alert} runbook_url ${r.annotations?.runbook_url}`).toBe(true);
    }
    // and no runbook for an alert that no longer exists
    const sections = [...read('docs', 'runbooks.md').matchAll(/^## (\w+)$/gm)].map((m) => m[1]);
    expect(sections.sort()).toEqual([...names].sort());
  });

  it('alerts use only metrics that exist', () => {
    const used = rules.flatMap((r) => promqlMetricNames(r.expr));
    expect(used).toContain('vigil_timers_overdue');
    expect(used.filter((n) => !isKnownMetric(n))).toEqual([]);
  });

  const dashboardFile = read('ops', 'grafana', 'vigil-dashboard.json');
  const dashboard = JSON.parse(dashboardFile) as {
    panels: {
      type: string;
      title: string;
      targets?: { expr: string }[];
      fieldConfig?: { defaults?: { unit?: string }; overrides?: unknown[] };
    }[];
    templating: { list: { query?: string | { query?: string } }[] };
  };

  it('the PrometheusRule carries exactly ops/prometheus/vigil-rules.yaml', () => {
    expect(rule.spec, 'run `node scripts/sync-dashboard.mjs`').toEqual(parse(read('ops', 'prometheus', 'vigil-rules.yaml')));
  });

  it('the dashboard ConfigMap carries exactly ops/grafana/vigil-dashboard.json', () => {
    const cm = one('grafana-dashboard.yaml', 'ConfigMap');
    expect(cm.metadata?.labels?.grafana_dashboard).toBe('1');
    const embedded = Object.values(cm.data ?? {});
    expect(embedded).toHaveLength(1);
    expect(JSON.parse(embedded[0] ?? 'null'), 'run `node scripts/sync-dashboard.mjs`').toEqual(dashboard);
  });

  it('dashboard panels query only metrics that exist, and cover the on-call questions', () => {
    const exprs = dashboard.panels
      .filter((p) => p.type !== 'row')
      .flatMap((p) => {
        expect(p.targets?.length, p.title).toBeGreaterThan(0);
        return (p.targets ?? []).map((t) => t.expr);
      });
    for (const v of dashboard.templating.list) {
      const q = typeof v.query === 'string' ? v.query : v.query?.query;
      const m = q ? /label_values\((\w+)/.exec(q) : null;
      if (m?.[1]) exprs.push(m[1]);
    }
    const used = new Set(exprs.flatMap(promqlMetricNames));
    expect([...used].filter((n) => !isKnownMetric(n))).toEqual([]);
    for (const needed of [
      'vigil_timers_overdue',
      'vigil_timers_overdue_oldest_age_seconds',
      'vigil_escalation_lag_seconds_bucket',
      'vigil_sweeps_total',
      'vigil_sweep_duration_seconds_bucket',
      'vigil_lock_acquisitions_total',
      'vigil_sos_sms_latency_seconds_bucket',
      'vigil_commands_total',
      // Vigil's own 1 ms sampler; prom-client's lag gauges (10 ms resolution: an idle replica reads 10 ms) are not drawn
      'vigil_event_loop_delay_seconds',
      'vigil_deliveries_total',
      'vigil_delivery_oldest_pending_age_seconds',
      'vigil_deliveries_dead',
      'vigil_http_request_duration_seconds_bucket',
      'vigil_socketio_connections',
    ]) {
      expect(used.has(needed), needed).toBe(true);
    }
  });
});

describe('dashboard panels', () => {
  const dashboard = JSON.parse(read('ops', 'grafana', 'vigil-dashboard.json')) as {
    panels: { type: string; title: string; targets?: { expr: string }[]; fieldConfig?: { defaults?: { unit?: string } } }[];
  };
  const graphs = dashboard.panels.filter((p) => p.type !== 'row');

  it('a ratio panel shows 0, not "No data", when nothing happened', () => {
    for (const p of graphs.filter((g) => g.fieldConfig?.defaults?.unit === 'percentunit')) {
      for (const t of p.targets ?? []) expect(t.expr, p.title).toMatch(/\/ \(.*> 0\)\) or vector\(0\)$/);
    }
  });

  it('every panel has one unit, and time-series panels of seconds plot only durations', () => {
    for (const p of graphs) expect(p.fieldConfig?.defaults?.unit, p.title).toBeTruthy();
    for (const p of graphs.filter((g) => g.fieldConfig?.defaults?.unit === 's' && g.type === 'timeseries')) {
      for (const t of p.targets ?? []) expect(t.expr, p.title).toMatch(/_seconds|histogram_quantile/);
    }
  });

  it('no panel reads the lock-holder gauge, which is 1 only for the milliseconds of a sweep', () => {
    for (const p of graphs) for (const t of p.targets ?? []) expect(t.expr, p.title).not.toContain('vigil_lock_holder');
  });
});

describe('Dockerfile', () => {
  const { stages } = parseDockerfile(read('Dockerfile'));
  const final = stages.at(-1);
  const ops = (op: string) => (final?.instructions ?? []).filter((i) => i.op === op);
  const everything = stages.flatMap((s) => s.instructions);

  it('is multi-stage on Node 22 LTS bookworm-slim pinned by digest: npm ci + build, then npm ci --omit=dev', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const bases = new Set(stages.filter((s) => !stages.some((o) => o.name === s.from)).map((s) => s.from));
    expect(bases.size, 'one base image').toBe(1);
    expect([...bases][0]).toMatch(/^node:22\.\d+\.\d+-bookworm-slim@sha256:[0-9a-f]{64}$/);
    const runs = everything.filter((i) => i.op === 'RUN').map((i) => i.args);
    expect(runs.some((r) => /\bnpm ci\b(?!.*--omit=dev)/.test(r))).toBe(true);
    expect(runs.some((r) => /\bnpm run build\b/.test(r))).toBe(true);
    expect(runs.some((r) => /\bnpm ci --omit=dev\b/.test(r))).toBe(true);
    expect(
      ops('RUN').some((r) => /\bg\+\+|build-essential/.test(r.args)),
      'no compiler in the runtime image',
    ).toBe(false);
  });

  it('runs node dist/main.js as the non-root user the Deployment expects, under an init', () => {
    const user = ops('USER').at(-1)?.args ?? 'root';
    const uid = user.split(':')[0] ?? '';
    expect(['root', '0', '']).not.toContain(uid);
    expect(Number(uid)).toBe(container.securityContext?.runAsUser ?? podSpec.securityContext?.runAsUser);
    expect(JSON.parse(ops('CMD').at(-1)?.args ?? '[]')).toEqual(['node', 'dist/main.js']);
    const entry = JSON.parse(ops('ENTRYPOINT').at(-1)?.args ?? '[]') as string[];
    expect(entry[0]).toMatch(/tini$/);
    expect(ops('RUN').some((r) => /apt-get install .*\btini\b/.test(r.args))).toBe(true);
    expect(ops('EXPOSE').map((e) => Number(e.args))).toContain(container.ports?.[0]?.containerPort);
  });

  it('has a .dockerignore that keeps local state out of the context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim());
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', 'data', '.git', '.tools', 'artifacts']));
  });
});
