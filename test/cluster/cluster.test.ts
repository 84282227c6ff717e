/**
 * Cluster mode with real processes: three replicas of the built server
 * (`node dist/main.js`) sharing one SQLite file (WAL) and a throwaway redis-server.
 * The cases are in cluster-cases.ts (the same ones run on MongoDB in
 * cluster-mongo.test.ts); faults are in faults.test.ts.
 */
import { afterEach, describe } from 'vitest';
import { fanOut, roundRobin500 } from './cluster-cases.js';
import { clusterCanRun, scenarios, storeLabel, suiteName } from './harness.js';

const reg = scenarios();
afterEach(() => reg.cleanup());

describe.skipIf(!clusterCanRun)(suiteName(`cluster: 3 replicas, ${storeLabel(reg.backend)}, one Redis`), () => {
  roundRobin500(reg);
  fanOut(reg);
});
