/**
 * The Markdown pages hold together: every relative link points at a file of the repository
 * (and, into a Markdown page, at one of its headings), and the `src/` tree in
 * docs/architecture.md names every folder of src/ and nothing that is not there. A page
 * moved or a heading renamed fails here instead of leaving a dead link.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { markdownAnchors } from '../helpers/ops.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** README.md and every page under docs/, relative to the root. */
function pages(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
    );
  return ['README.md', ...walk('docs')];
}

/** The text with fenced code blocks and inline code blanked out: links there are examples. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Every link target of a page: `[text](target)` and `![alt](target)`, title dropped. */
function linkTargets(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] ?? '');
}

const external = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target);

describe('Markdown links', () => {
  it('every relative link resolves to a file, and an anchor into a page to one of its headings', () => {
    const broken: string[] = [];
    for (const page of pages()) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      for (const target of linkTargets(text)) {
        if (external(target)) continue;
        const [path = '', anchor] = target.split('#');
        const file = path === '' ? join(ROOT, page) : resolve(ROOT, dirname(page), decodeURIComponent(path));
        if (!file.startsWith(ROOT) || !existsSync(file)) {
          broken.push(`${page}: ${target} (no such file)`);
          continue;
        }
        if (anchor && file.endsWith('.md') && !markdownAnchors(readFileSync(file, 'utf8')).has(anchor))
          broken.push(`${page}: ${target} (no heading #${anchor} in ${relative(ROOT, file)})`);
      }
    }
    expect(broken, broken.join('\n')).toEqual([]);
  });

  it('finds links outside code and skips those inside it', () => {
    const text = 'See [a](a.md#x) and `[b](b.md)`.\n\n```md\n[c](c.md)\n```\n![d](d.png "title")';
    expect(linkTargets(text)).toEqual(['a.md#x', 'd.png']);
  });
});

describe('the src/ tree in docs/architecture.md', () => {
  /** The paths the tree lists (two spaces of indentation per level below `src/`). */
  function listed(): string[] {
    const text = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
    const section = text.split(/^## Where the code lives$/m)[1] ?? '';
    const block = /^```\n([\s\S]*?)^```$/m.exec(section)?.[1] ?? '';
    const stack: string[] = [];
    const paths: string[] = [];
    for (const line of block.split('\n')) {
      const m = /^( *)(\S+)/.exec(line);
      if (!m) continue;
      const depth = (m[1] ?? '').length / 2;
      stack.length = depth;
      stack.push((m[2] ?? '').replace(/\/$/, ''));
      paths.push(stack.join('/'));
    }
    return paths;
  }

  function foldersOf(dir: string): string[] {
    return readdirSync(join(ROOT, dir), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .flatMap((e) => [join(dir, e.name), ...foldersOf(join(dir, e.name))]);
  }

  it('lists every folder of src/ and every file directly in it', () => {
    const tree = new Set(listed());
    const files = readdirSync(join(ROOT, 'src')).filter((name) => statSync(join(ROOT, 'src', name)).isFile());
    const missing = [...foldersOf('src'), ...files.map((f) => join('src', f))].filter((p) => !tree.has(p));
    expect(missing, `add to the tree in docs/architecture.md: ${missing.join(', ')}`).toEqual([]);
  });

  it('lists nothing that does not exist', () => {
    const gone = listed().filter((p) => !existsSync(join(ROOT, p)));
    expect(gone, `no longer in the repository: ${gone.join(', ')}`).toEqual([]);
  });
});
