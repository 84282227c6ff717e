/**
 * The reference tables in the docs (settings, the ConfigMap, metrics, MongoDB indexes, error
 * codes, routes, layering rules) are generated from the code that declares their facts by
 * `npm run docs` (scripts/gen-docs.ts). Rendered again here, in memory: a section that differs
 * from its page fails, naming the page, the section, its source and the command.
 */
import { describe, expect, it } from 'vitest';
import { COMMAND, SECTIONS, staleSections } from '../../scripts/gen-docs.js';
import { parseConfigMapEnv } from '../../scripts/docs/tables.js';

describe('generated reference docs', () => {
  it('every generated section is what its source renders now', async () => {
    const stale = await staleSections();
    const messages = stale.map((s) => `${s.file}: section "${s.name}" is stale; its source is ${s.source}: run \`${COMMAND}\``);
    expect(messages, messages.join('\n')).toEqual([]);
  });

  it('each section has one name', () => {
    const names = SECTIONS.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('reads the ConfigMap file: a comment right above a key is its reason, a comment before a blank line is not', () => {
    const lines = parseConfigMapEnv('# about the file\n\n# why A\nA=1\nB=x=y\n# loose\n\n');
    expect(lines).toEqual([
      { key: 'A', value: '1', why: 'why A' },
      { key: 'B', value: 'x=y', why: '' },
    ]);
  });
});
