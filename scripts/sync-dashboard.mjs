// Writes the generated Kubernetes copies of the two ops sources, the one copies to edit:
//   ops/grafana/vigil-dashboard.json  → k8s/grafana-dashboard.yaml (a ConfigMap for the Grafana sidecar)
//   ops/prometheus/vigil-rules.yaml   → k8s/prometheusrule.yaml    (a PrometheusRule for the Operator)
// test/ops/manifests.test.ts fails when a copy differs. Run from the repository root:  node scripts/sync-dashboard.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import { parse } from 'yaml';

const indent = (text, spaces) =>
  text
    .trimEnd()
    .split('\n')
    .map((line) => (line === '' ? '' : `${' '.repeat(spaces)}${line}`))
    .join('\n');

const json = readFileSync('ops/grafana/vigil-dashboard.json', 'utf8');
JSON.parse(json); // refuse to ship a broken dashboard
writeFileSync(
  'k8s/grafana-dashboard.yaml',
  `# Generated from ops/grafana/vigil-dashboard.json by \`node scripts/sync-dashboard.mjs\`: edit the JSON, then rerun.
# The Grafana sidecar (kube-prometheus-stack, grafana helm chart) imports ConfigMaps labelled grafana_dashboard: "1".
apiVersion: v1
kind: ConfigMap
metadata:
  name: vigil-grafana-dashboard
  labels:
    app.kubernetes.io/name: vigil
    app.kubernetes.io/part-of: vigil
    grafana_dashboard: '1'
data:
  vigil-dashboard.json: |
${indent(json, 4)}
`,
);

const rules = readFileSync('ops/prometheus/vigil-rules.yaml', 'utf8');
if (!Array.isArray(parse(rules)?.groups)) throw new Error('ops/prometheus/vigil-rules.yaml has no groups');
// the rules file's own text (comments included) becomes the spec: `groups:` sits at its top level
const groups = rules.slice(rules.search(/^groups:/m));
writeFileSync(
  'k8s/prometheusrule.yaml',
  `# Generated from ops/prometheus/vigil-rules.yaml by \`node scripts/sync-dashboard.mjs\`: edit the rules file, then rerun.
# Each alert has a runbook section in docs/runbooks.md (runbook_url); ops/prometheus/vigil-rules.test.yaml proves them.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: vigil
  labels:
    app.kubernetes.io/name: vigil
    app.kubernetes.io/part-of: vigil
spec:
${indent(groups, 2)}
`,
);
