/**
 * Fails a test file that leaves something running: a server, a socket, a child process or
 * a timer still keeping the event loop alive after its last hook. Registered for every
 * file in vitest.config.ts. Handles close asynchronously, so it waits a little first.
 */
import { afterAll, beforeAll } from 'vitest';

const WATCHED = ['TCPServerWrap', 'TCPSocketWrap', 'PipeServerWrap', 'ProcessWrap', 'UDPWrap', 'Timeout'] as const;
const GRACE_MS = 5_000;

type Counts = Map<string, number>;

function count(): Counts {
  const c: Counts = new Map();
  for (const r of process.getActiveResourcesInfo()) if ((WATCHED as readonly string[]).includes(r)) c.set(r, (c.get(r) ?? 0) + 1);
  return c;
}

function leaked(before: Counts, after: Counts): string[] {
  const out: string[] = [];
  for (const [kind, n] of after) {
    const extra = n - (before.get(kind) ?? 0);
    if (extra > 0) out.push(`${extra} × ${kind}`);
  }
  return out;
}

let baseline: Counts = new Map();

beforeAll(() => {
  baseline = count();
});

afterAll(async () => {
  const deadline = Date.now() + GRACE_MS;
  let left = leaked(baseline, count());
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    await new Promise<void>((resolve) => setTimeout(resolve, 50).unref());
    left = leaked(baseline, count());
  }
  if (left.length > 0) throw new Error(`this test file left resources open after its last hook: ${left.join(', ')}`);
}, GRACE_MS + 5_000);
