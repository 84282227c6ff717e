/**
 * Cluster faults with real processes on one SQLite file shared
 * by three replicas and one throwaway redis-server. The cases are in fault-cases.ts (the
 * same ones run on MongoDB in cluster-mongo.test.ts).
 */
import { afterEach, describe } from 'vitest';
import { concurrentSweepers, killHolder, killShardHolder, pauseHolder, redisOutage, termHolder } from './fault-cases.js';
import { clusterCanRun, scenarios, storeLabel, suiteName } from './harness.js';

const reg = scenarios();
afterEach(() => reg.cleanup());

describe.skipIf(!clusterCanRun)(suiteName(`cluster faults: 3 replicas, ${storeLabel(reg.backend)}, one Redis`), () => {
  killHolder(reg);
  killShardHolder(reg);
  termHolder(reg);
  pauseHolder(reg);
  redisOutage(reg);
  concurrentSweepers(reg);
});
