/**
 * No manifest object carries a field Kubernetes does not know. The API server drops unknown
 * fields silently (a misspelt `readinessProbe` is simply no probe), and kubernetes-models'
 * `validate()` does not reject them either; TypeScript's excess-property check does: each
 * object of the kustomize-like build of k8s/ is written as an object literal typed with its
 * kubernetes-models interface and compiled with `tsc --noEmit`.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { typecheckFile } from '../helpers/typecheck.js';
import { kustomizeBuild, type KObject } from '../helpers/kustomize.js';

const ROOT = join(import.meta.dirname, '..', '..');
const TYPES: Record<string, { from: string; type: string }> = {
  'v1/ConfigMap': { from: 'kubernetes-models/v1', type: 'IConfigMap' },
  'v1/Service': { from: 'kubernetes-models/v1', type: 'IService' },
  'apps/v1/Deployment': { from: 'kubernetes-models/apps/v1', type: 'IDeployment' },
  'autoscaling/v2/HorizontalPodAutoscaler': { from: 'kubernetes-models/autoscaling/v2', type: 'IHorizontalPodAutoscaler' },
  'policy/v1/PodDisruptionBudget': { from: 'kubernetes-models/policy/v1', type: 'IPodDisruptionBudget' },
};

describe('manifest fields', () => {
  mkdirSync(join(ROOT, 'artifacts'), { recursive: true });
  // inside the repository, so that kubernetes-models resolves from its node_modules
  const dir = mkdtempSync(join(ROOT, 'artifacts', 'manifest-check-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const tsc = (objects: KObject[]) => {
    const typed = objects.filter((o) => TYPES[`${o.apiVersion}/${o.kind}`]);
    const imports = [...new Set(typed.map((o) => TYPES[`${o.apiVersion}/${o.kind}`]?.from))]
      .map(
        (from) =>
          `import type { ${Object.values(TYPES)
            .filter((t) => t.from === from)
            .map((t) => t.type)
            .join(', ')} } from '${from}';`,
      )
      .join('\n');
    const body = typed
      .map((o, i) => `export const o${i}: ${TYPES[`${o.apiVersion}/${o.kind}`]?.type ?? ''} = ${JSON.stringify(o, null, 2)};`)
      .join('\n\n');
    return { ...typecheckFile(dir, `${imports}\n\n${body}\n`, ROOT), count: typed.length };
  };

  it('every built-in object of `kubectl apply -k k8s/` has only fields its Kubernetes type declares', () => {
    const r = tsc(kustomizeBuild(join(ROOT, 'k8s')));
    expect(r.count).toBeGreaterThanOrEqual(6);
    expect(r.output).toBe('');
    expect(r.status).toBe(0);
  });

  it('a misspelt field fails the check', () => {
    const objects = kustomizeBuild(join(ROOT, 'k8s'));
    const d = objects.find((o) => o.kind === 'Deployment') as KObject & {
      spec: { template: { spec: { containers: Record<string, unknown>[] } } };
    };
    const c = d.spec.template.spec.containers[0] ?? {};
    c.readynessProbe = c.readinessProbe;
    delete c.readinessProbe;
    const r = tsc(objects);
    expect(r.status).not.toBe(0);
    expect(r.output).toContain('readynessProbe');
  });
});
