import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

const SECRET = { JWT_SECRET: randomBytes(32).toString('hex'), CONTACT_ID_KEY: randomBytes(32).toString('hex') };

describe('defaults that depend on the mode', () => {
  it('DELIVERY_MAX_IN_FLIGHT: 96 on one process, 32 per replica in cluster mode, the set value either way; 0 is refused', () => {
    expect(loadConfig({ ...SECRET }).delivery.maxInFlight).toBe(96);
    expect(loadConfig({ ...SECRET, REDIS_URL: 'redis://127.0.0.1:6379' }).delivery.maxInFlight).toBe(32);
    expect(loadConfig({ ...SECRET, MONGODB_URI: 'mongodb://127.0.0.1:27017/vigil' }).delivery.maxInFlight).toBe(32);
    expect(loadConfig({ ...SECRET, REDIS_URL: 'redis://127.0.0.1:6379', DELIVERY_MAX_IN_FLIGHT: '80' }).delivery.maxInFlight).toBe(80);
    expect(loadConfig({ ...SECRET, DELIVERY_MAX_IN_FLIGHT: '7' }).delivery.maxInFlight).toBe(7);
    expect(() => loadConfig({ ...SECRET, DELIVERY_MAX_IN_FLIGHT: '0' })).toThrow(/DELIVERY_MAX_IN_FLIGHT/);
  });

  it('SWEEP_KEEP_LEASE_MS: 1000 by default, 0 with wake-ups off (the holder looks again only at a wake-up), never longer than the shortest timer', () => {
    expect(loadConfig({ ...SECRET }).sweep.keepLeaseMs).toBe(1000);
    expect(loadConfig({ ...SECRET, SWEEP_WAKE_UPS: 'off' }).sweep.keepLeaseMs).toBe(0);
    expect(loadConfig({ ...SECRET, SWEEP_KEEP_LEASE_MS: '0' }).sweep.keepLeaseMs).toBe(0);
    expect(loadConfig({ ...SECRET, TIMER_MIN_SECONDS: '1', SWEEP_KEEP_LEASE_MS: '1000' }).sweep.keepLeaseMs).toBe(1000);
    // a replica arming a 1 s timer while another keeps the lease for 1.5 s would find the lock held at its deadline
    expect(() => loadConfig({ ...SECRET, TIMER_MIN_SECONDS: '1', SWEEP_KEEP_LEASE_MS: '1500' })).toThrow(/SWEEP_KEEP_LEASE_MS/);
    expect(() => loadConfig({ ...SECRET, SWEEP_KEEP_LEASE_MS: '-1' })).toThrow(/SWEEP_KEEP_LEASE_MS/);
  });

  it("HTTP_RESERVED_CONNECTIONS: Socket.IO's share is HTTP_MAX_CONNECTIONS less a quarter by default, less the set value; no cap, no share", () => {
    expect(loadConfig({ ...SECRET }).sockets.maxConnections).toBe(3072);
    expect(loadConfig({ ...SECRET, HTTP_MAX_CONNECTIONS: '10' }).sockets.maxConnections).toBe(7);
    expect(loadConfig({ ...SECRET, HTTP_MAX_CONNECTIONS: '100', HTTP_RESERVED_CONNECTIONS: '10' }).sockets.maxConnections).toBe(90);
    expect(loadConfig({ ...SECRET, HTTP_MAX_CONNECTIONS: '0' }).sockets.maxConnections).toBeUndefined();
    // a share of nothing would refuse every socket; a reserve without a cap means nothing
    expect(() => loadConfig({ ...SECRET, HTTP_MAX_CONNECTIONS: '100', HTTP_RESERVED_CONNECTIONS: '100' })).toThrow(
      /HTTP_RESERVED_CONNECTIONS/,
    );
    expect(() => loadConfig({ ...SECRET, HTTP_MAX_CONNECTIONS: '0', HTTP_RESERVED_CONNECTIONS: '10' })).toThrow(
      /HTTP_RESERVED_CONNECTIONS/,
    );
  });
});
