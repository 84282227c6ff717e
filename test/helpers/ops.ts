/**
 * Small parsers for the operability tests: metric names out of PromQL, Dockerfile
 * instructions by stage, GitHub-style heading anchors. Deliberately simple: they only
 * need to read what this repository writes.
 */

const PROMQL_WORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'inf',
  'nan',
]);

/**
 * Metric names used by a PromQL expression: every bare identifier that is not a function
 * call, a keyword, or inside a string, a label matcher `{…}`, a range `[…]` or a grouping
 * clause `by (…)`.
 */
export function promqlMetricNames(expr: string): string[] {
  let s = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  s = s.replace(/\{[^}]*\}/g, ' ').replace(/\[[^\]]*\]/g, ' ');
  s = s.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  s = s.replace(/\$\{?\w+\}?/g, ' '); // Grafana variables
  const names = new Set<string>();
  for (const m of s.matchAll(/[A-Za-z_:][\w:]*/g)) {
    const word = m[0];
    const after = s.slice((m.index ?? 0) + word.length).trimStart();
    if (after.startsWith('(')) continue; // a function
    if (PROMQL_WORDS.has(word.toLowerCase())) continue;
    const before = s.slice(0, m.index ?? 0);
    if (/\d$/.test(before)) continue; // the unit of a duration like 5m
    names.add(word);
  }
  return [...names];
}

/** Accept histogram series of a known histogram. */
export function metricExists(name: string, known: Set<string>): boolean {
  if (known.has(name)) return true;
  const base = name.replace(/_(bucket|count|sum)$/, '');
  return base !== name && known.has(base);
}

export interface DockerInstruction {
  op: string;
  args: string;
}
export interface DockerStage {
  from: string;
  name?: string;
  instructions: DockerInstruction[];
}

/** Dockerfile → stages (ARG defaults substituted in FROM), continuation lines joined. */
export function parseDockerfile(text: string): { globalArgs: Record<string, string>; stages: DockerStage[] } {
  const lines = text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const globalArgs: Record<string, string> = {};
  const stages: DockerStage[] = [];
  for (const line of lines) {
    const [op = '', ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    const OP = op.toUpperCase();
    if (OP === 'FROM') {
      const [image = '', as, name] = args.split(/\s+/);
      const from = image.replace(/\$\{?(\w+)\}?/g, (_m, v: string) => globalArgs[v] ?? '');
      stages.push({ from, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) {
      if (OP === 'ARG') {
        const [k = '', v = ''] = args.split('=');
        globalArgs[k.trim()] = v.trim();
      }
      continue;
    }
    stage.instructions.push({ op: OP, args });
  }
  return { globalArgs, stages };
}

/** The anchor GitHub gives a Markdown heading. */
export function githubAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

export function markdownAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6}\s+(.+)$/gm)) anchors.add(githubAnchor(m[1] ?? ''));
  for (const m of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1] ?? '');
  return anchors;
}
