import { defineConfig } from 'vitest/config';

const shared = {
  testTimeout: 60_000,
  hookTimeout: 120_000,
  pool: 'forks' as const,
  // a file that leaves a server, socket, child process or timer open fails
  setupFiles: ['test/setup/leaks.ts'],
};

export default defineConfig({
  test: {
    // two cores: files run two at a time
    maxWorkers: 2,
    // the JSON report lets .ci/run print a plain "N passed, N failed" closing line
    reporters: ['default', 'json'],
    outputFile: { json: 'artifacts/vitest-report.json' },
    projects: [
      {
        test: { ...shared, name: 'main', include: ['test/**/*.test.ts'], exclude: ['test/cluster/**'], sequence: { groupOrder: 0 } },
      },
      {
        // real replica processes measure takeover times: run them after the rest, one file at a time
        test: { ...shared, name: 'cluster', include: ['test/cluster/**/*.test.ts'], fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
