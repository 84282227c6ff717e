import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

const SECRET = { JWT_SECRET: 'x'.repeat(32) };

describe('defaults that depend on the mode', () => {
  it('DELIVERY_MAX_IN_FLIGHT: 96 on one process, 32 per replica in cluster mode, the set value either way; 0 is refused', () => {
    expect(loadConfig({ ...SECRET }).delivery.maxInFlight).toBe(96);
    expect(loadConfig({ ...SECRET, REDIS_URL: 'redis://127.0.0.1:6379' }).delivery.maxInFlight).toBe(32);
    expect(loadConfig({ ...SECRET, MONGODB_URI: 'mongodb://127.0.0.1:27017/vigil' }).delivery.maxInFlight).toBe(32);
    expect(loadConfig({ ...SECRET, REDIS_URL: 'redis://127.0.0.1:6379', DELIVERY_MAX_IN_FLIGHT: '80' }).delivery.maxInFlight).toBe(80);
    expect(loadConfig({ ...SECRET, DELIVERY_MAX_IN_FLIGHT: '7' }).delivery.maxInFlight).toBe(7);
    expect(() => loadConfig({ ...SECRET, DELIVERY_MAX_IN_FLIGHT: '0' })).toThrow(/DELIVERY_MAX_IN_FLIGHT/);
  });
});
