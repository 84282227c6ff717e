import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // two cores: files run in parallel, two at a time; cluster files spawn their own processes
    maxWorkers: 2,
    pool: 'forks',
    reporters: ['default'],
  },
});
