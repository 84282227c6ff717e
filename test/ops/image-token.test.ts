/**
 * The token tool the start-up banner advertises (`npm run token -- --user alice`) works in
 * the runtime image, which has no tsx: the Dockerfile's own build step compiles
 * scripts/token.ts to tools/, its runtime step points `npm run token` at it, and the token
 * it prints is signed with the secret the server uses. Both steps are taken from the
 * Dockerfile text and run here in a directory laid out like the image's /app.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyToken } from '../../src/auth/tokens.js';
import { parseDockerfile } from '../helpers/ops.js';

const ROOT = join(import.meta.dirname, '..', '..');
const { stages } = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const runs = (name: string) => (stages.find((s) => s.name === name)?.instructions ?? []).filter((i) => i.op === 'RUN').map((i) => i.args);

describe('the token tool in the image', () => {
  const app = mkdtempSync(join(tmpdir(), 'vigil-image-'));
  afterAll(() => rmSync(app, { recursive: true, force: true }));

  it('compiles with the build stage command, and `npm run token` in the runtime layout prints a token the server accepts', () => {
    const compile = runs('build').find((r) => r.includes('scripts/token.ts'));
    expect(compile, 'the build stage compiles scripts/token.ts').toBeDefined();
    const args = (compile ?? '').split(/\s+/);
    expect(args.slice(0, 2)).toEqual(['npx', 'tsc']);
    const outDir = args.indexOf('--outDir');
    expect(args[outDir + 1]).toBe('tools');
    args[outDir + 1] = join(app, 'tools');
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), ...args.slice(2)], {
      cwd: ROOT,
      stdio: 'pipe',
    });

    const pkgSet = /npm pkg set (scripts\.token="[^"]+")/.exec(runs('runtime').join('\n'))?.[1];
    expect(pkgSet, 'the runtime stage points npm run token at the compiled tool').toBeDefined();
    cpSync(join(ROOT, 'package.json'), join(app, 'package.json'));
    symlinkSync(join(ROOT, 'node_modules'), join(app, 'node_modules'));
    // the runtime stage's npm settings, with its /tmp moved into this test's directory
    const runtimeEnv = (stages.at(-1)?.instructions ?? [])
      .filter((i) => i.op === 'ENV')
      .map((i) => i.args)
      .join(' ');
    const npmConfig = Object.fromEntries(
      [...runtimeEnv.matchAll(/\b(npm_config_\w+)=(\S+)/g)].map((m) => [m[1], (m[2] ?? '').replace(/^\/tmp\//, `${app}/tmp/`)]),
    );
    expect(npmConfig).toMatchObject({ npm_config_logs_max: '0', npm_config_update_notifier: 'false' });
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: app, DATA_DIR: join(app, 'data'), ...npmConfig };
    execFileSync('npm', ['pkg', 'set', (pkgSet ?? '').replace(/"/g, '')], { cwd: app, env, stdio: 'pipe' });

    const token = execFileSync('npm', ['run', '-s', 'token', '--', '--user', 'alice', '--admin'], {
      cwd: app,
      env,
      encoding: 'utf8',
    }).trim();
    const secret = readFileSync(join(app, 'data', 'jwt-secret'), 'utf8').trim();
    expect(verifyToken(secret, token)).toMatchObject({ userId: 'alice', admin: true });
  });
});
