/**
 * Writes every generated section of the docs from the code that declares its facts
 * (`npm run docs`). A section sits between
 *   <!-- generated:NAME … -->   and   <!-- /generated:NAME -->
 * in its page; everything between is replaced. test/unit/docs-generated.test.ts renders
 * the same sections in memory and fails, naming the section, when one is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { configTables, errorsTable, k8sConfigTable, layersTable, metricsTable, mongoIndexesTable, routesTable } from './docs/tables.js';

export interface Section {
  name: string;
  /** the page, relative to the repository root */
  file: string;
  /** where its facts are declared: edit there */
  source: string;
  render: (root: string) => string | Promise<string>;
}

export const SECTIONS: Section[] = [
  { name: 'config', file: 'docs/configuration.md', source: 'src/config/env.ts', render: configTables },
  { name: 'k8s-config', file: 'docs/configuration.md', source: 'k8s/vigil-config.env', render: k8sConfigTable },
  { name: 'metrics', file: 'docs/operating.md', source: 'src/metrics/', render: metricsTable },
  { name: 'mongo-indexes', file: 'docs/mongodb.md', source: 'src/store/mongo/*schemas.ts', render: mongoIndexesTable },
  { name: 'errors', file: 'docs/errors.md', source: 'src/domain/error-codes.ts, src/http/error-codes.ts', render: errorsTable },
  { name: 'routes', file: 'docs/api.md', source: 'src/http/openapi.ts', render: routesTable },
  { name: 'layers', file: 'docs/architecture.md', source: '.dependency-cruiser.cjs', render: layersTable },
];

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const COMMAND = 'npm run docs';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const blockOf = (name: string) => new RegExp(`<!-- generated:${escape(name)}\\b[^>]*-->[\\s\\S]*?<!-- /generated:${escape(name)} -->`, 'g');

/** The section as it belongs in its page, markers included, formatted as Prettier would. */
export async function renderBlock(section: Section, root = ROOT): Promise<string> {
  const markdown = await section.render(root);
  const options = (await resolveConfig(join(root, section.file))) ?? {};
  const body = (await format(markdown, { ...options, parser: 'markdown' })).trimEnd();
  const open = `<!-- generated:${section.name} from ${section.source} by \`${COMMAND}\`: edit the source, not this table -->`;
  return `${open}\n\n${body}\n\n<!-- /generated:${section.name} -->`;
}

/** `text` with the section replaced; throws when its markers are missing or doubled. */
export function withSection(text: string, section: Section, block: string): string {
  const found = text.match(blockOf(section.name)) ?? [];
  if (found.length !== 1)
    throw new Error(
      `${section.file}: expected one <!-- generated:${section.name} --> … <!-- /generated:${section.name} --> block, found ${found.length}`,
    );
  return text.replace(blockOf(section.name), () => block);
}

/** Each section whose page differs from what its source renders now. */
export async function staleSections(root = ROOT): Promise<Section[]> {
  const stale: Section[] = [];
  for (const section of SECTIONS) {
    const text = readFileSync(join(root, section.file), 'utf8');
    if (withSection(text, section, await renderBlock(section, root)) !== text) stale.push(section);
  }
  return stale;
}

async function main(): Promise<void> {
  for (const section of SECTIONS) {
    const path = join(ROOT, section.file);
    const text = readFileSync(path, 'utf8');
    const next = withSection(text, section, await renderBlock(section));
    if (next !== text) {
      writeFileSync(path, next);
      console.log(`${section.file}: ${section.name} rewritten from ${section.source}`);
    }
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
