// Writes k8s/grafana-dashboard.yaml (a ConfigMap for the Grafana sidecar) from
// ops/grafana/vigil-dashboard.json, the one copy to edit. test/unit/manifests.test.ts
// fails when the two differ:  node scripts/sync-dashboard.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const json = readFileSync('ops/grafana/vigil-dashboard.json', 'utf8');
JSON.parse(json); // refuse to ship a broken dashboard
const body = json
  .trimEnd()
  .split('\n')
  .map((line) => `    ${line}`)
  .join('\n');
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
    grafana_dashboard: "1"
data:
  vigil-dashboard.json: |
${body}
`,
);
