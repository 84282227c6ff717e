/**
 * The request budgets start without a false alarm: express-rate-limit's IPv6 heuristic reads a
 * key generator's source for `req.ip` without `ipKeyGenerator`, and the address budget's key
 * does call it (through addressKey). A validation message went to the "shared store
 * unavailable" warning, once per start, on a replica with no shared store at all.
 */
import { pino } from 'pino';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createRateLimits } from '../../src/http/rate-limit.js';

describe('request budgets', () => {
  it('build without a warning (no false "shared store unavailable" at start-up)', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const config = loadConfig({ JWT_SECRET: randomBytes(32).toString('hex') });
    const limits = createRateLimits(config.rateLimit, pino({ level: 'info' }, sink));
    limits.close();
    expect(lines.filter((l) => l.includes('"level":40'))).toEqual([]);
  });
});
