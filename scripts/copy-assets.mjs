// Copies the non-TypeScript files that the build needs at run time (.sql migrations,
// .lua scripts, static console files) from src/ to dist/, keeping their paths.
import { cpSync, readdirSync, statSync, mkdirSync } from 'node:fs';
import { join, dirname, extname } from 'node:path';

const ASSETS = new Set(['.sql', '.lua', '.html', '.css', '.svg', '.json']);
function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (ASSETS.has(extname(name)) && name !== 'tsconfig.json') {
      const out = join('dist', p.slice('src/'.length));
      mkdirSync(dirname(out), { recursive: true });
      cpSync(p, out);
    }
  }
}
walk('src');
