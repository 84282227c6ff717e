/**
 * TRUST_PROXY, the parser and what Express makes of its result: which hops may set
 * X-Forwarded-For. The default trusts loopback only (a proxy on the same host).
 */
import express from 'express';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseTrustProxy } from '../../src/config.js';

const SECRET = { JWT_SECRET: '3f1c9a7e5b2d4c6f8a0e1b3d5c7f9a2e4b6d8f0a1c3e5a7b9d2f4a6c8e0b1d3f' };

/** Express's compiled `trust proxy` function for a setting: is the hop at `addr` (distance `i`) trusted? */
function trustFn(setting: boolean | number | string[]): (addr: string, i: number) => boolean {
  const app = express();
  app.set('trust proxy', setting);
  return app.get('trust proxy fn') as (addr: string, i: number) => boolean;
}

describe('parseTrustProxy', () => {
  it('reads true, false (or empty), a hop count, and lists of names, addresses and subnets', () => {
    expect(parseTrustProxy('true')).toBe(true);
    expect(parseTrustProxy(' TRUE ')).toBe(true);
    expect(parseTrustProxy('false')).toBe(false);
    expect(parseTrustProxy('')).toBe(false);
    expect(parseTrustProxy('1')).toBe(1);
    expect(parseTrustProxy('2')).toBe(2);
    expect(parseTrustProxy('loopback')).toEqual(['loopback']);
    expect(parseTrustProxy('loopback, 10.0.0.0/8 ,fd00::/8')).toEqual(['loopback', '10.0.0.0/8', 'fd00::/8']);
    expect(parseTrustProxy('192.0.2.10,2001:db8::1,10.1.0.0/255.255.0.0')).toEqual(['192.0.2.10', '2001:db8::1', '10.1.0.0/255.255.0.0']);
    expect(parseTrustProxy('linklocal,uniquelocal')).toEqual(['linklocal', 'uniquelocal']);
  });

  it('refuses what Express would misread or crash on, naming TRUST_PROXY and the entry', () => {
    for (const bad of [
      '10.0.0.0/33',
      'fd00::/129',
      '10.0.0/8',
      '999.1.1.1',
      'localhost',
      '*',
      'loopback;10.0.0.0/8',
      '10.0.0.0/8/8',
      '-1',
      '1.5',
      '10.0.0.0/255.0.255.0',
    ]) {
      expect(() => parseTrustProxy(bad), bad).toThrow(ConfigError);
      expect(() => parseTrustProxy(bad), bad).toThrow(/^TRUST_PROXY: /);
    }
    expect(() => parseTrustProxy('loopback, 10.0.0.0/33')).toThrow(/"10\.0\.0\.0\/33"/);
  });

  it('every list it accepts compiles in Express', () => {
    for (const ok of ['loopback', '10.0.0.0/8, 172.16.0.0/12', '::1, fe80::/10', '10.1.0.0/255.255.0.0', '::ffff:10.0.0.1']) {
      expect(() => trustFn(parseTrustProxy(ok)), ok).not.toThrow();
    }
  });
});

describe('the default: loopback only', () => {
  it('is loopback, not every private network', () => {
    expect(loadConfig({ ...SECRET }).trustProxy).toEqual(['loopback']);
  });

  it('trusts a proxy on the same host, and no hop from a private network, a link-local or a public address', () => {
    const trusted = trustFn(loadConfig({ ...SECRET }).trustProxy);
    for (const addr of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) expect(trusted(addr, 0), addr).toBe(true);
    for (const addr of [
      '10.0.0.7',
      '172.16.3.4',
      '192.168.1.20',
      'fd12:3456::1',
      '169.254.169.254',
      'fe80::1',
      '203.0.113.9',
      '::ffff:10.0.0.7',
    ]) {
      expect(trusted(addr, 0), addr).toBe(false);
    }
  });
});
