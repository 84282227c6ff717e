/**
 * Type-checks one generated TypeScript file with the project's own `tsc` (strict, no emit),
 * so that a data file (a dashboard, a manifest) can be checked against the types a library
 * publishes. `dir` must be inside the repository so that the library resolves from node_modules.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');

export function typecheckFile(dir: string, source: string, cwd: string): { status: number | null; output: string } {
  writeFileSync(join(dir, 'check.ts'), source);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        skipLibCheck: true,
        noEmit: true,
        types: [],
      },
      files: ['check.ts'],
    }),
  );
  const r = spawnSync(process.execPath, [TSC, '-p', join(dir, 'tsconfig.json')], { cwd, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}
