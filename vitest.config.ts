import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // two cores: files run in parallel, two at a time; cluster files spawn their own processes
    maxWorkers: 2,
    pool: 'forks',
    // the JSON report lets .ci/run print a plain "N passed, N failed" closing line
    reporters: ['default', 'json'],
    outputFile: { json: 'artifacts/vitest-report.json' },
  },
});
