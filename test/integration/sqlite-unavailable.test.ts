/**
 * A SQLite file another process holds locked past the busy timeout, or a closed store,
 * answers 503 with Retry-After — the store being unavailable, as on MongoDB — never 500.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { holdWriteLock, type LockHolder } from '../helpers/sqlite-lock-holder.js';
import { startTestVigil } from '../helpers/vigil.js';

const CONTACTS = { contacts: [{ name: 'A', phone: '+14155550100' }] };

async function raw(url: string, token: string, method: string, body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as { error?: { code: string } } };
}

describe('SQLite busy or closed → 503', () => {
  it('a write while another process holds the file locked answers 503 store_busy with Retry-After; reads still answer; after the lock goes, writes succeed', async () => {
    const v = await startTestVigil({ SQLITE_BUSY_TIMEOUT_MS: '200' }, { manualTicks: true });
    let holder: LockHolder | undefined;
    try {
      const tok = v.token('busy-user');
      holder = await holdWriteLock(join(v.dataDir, 'vigil.db'));

      const put = await raw(`${v.url}/v1/me/contacts`, tok, 'PUT', CONTACTS);
      expect(put).toMatchObject({ status: 503, body: { error: { code: 'store_busy' } } });
      expect(Number(put.retryAfter)).toBeGreaterThan(0);
      const arm = await raw(`${v.url}/v1/timers`, tok, 'POST', { durationSeconds: 60 });
      expect(arm).toMatchObject({ status: 503, body: { error: { code: 'store_busy' } } });
      expect((await raw(`${v.url}/v1/timers`, tok, 'GET')).status).toBe(200); // WAL: readers are not blocked

      await holder.release();
      holder = undefined;
      expect((await raw(`${v.url}/v1/me/contacts`, tok, 'PUT', CONTACTS)).status).toBe(200);
    } finally {
      await holder?.release();
      await v.stop();
    }
  });

  it('a closed store answers 503 store_closed with Retry-After, not 500', async () => {
    const v = await startTestVigil({}, { manualTicks: true });
    try {
      const tok = v.token('closed-user');
      await v.vigil.store.close();
      for (const [method, path, body] of [
        ['GET', '/v1/timers', undefined],
        ['PUT', '/v1/me/contacts', CONTACTS],
        ['POST', '/v1/timers', { durationSeconds: 60 }],
      ] as const) {
        const r = await raw(`${v.url}${path}`, tok, method, body);
        expect(r, `${method} ${path}`).toMatchObject({ status: 503, body: { error: { code: 'store_closed' } } });
        expect(Number(r.retryAfter)).toBeGreaterThan(0);
      }
    } finally {
      await v.stop();
    }
  });

  it('the busy timeout defaults to a quarter of the lock TTL and may not exceed half of it', () => {
    const base = {
      DATA_DIR: join(process.cwd(), 'data-unused'),
      JWT_SECRET: randomBytes(32).toString('hex'),
      CONTACT_ID_KEY: randomBytes(32).toString('hex'),
      REDIS_URL: 'redis://127.0.0.1:1',
    };
    expect(loadConfig({ ...base }).sqliteBusyTimeoutMs).toBe(2500);
    expect(loadConfig({ ...base, LOCK_TTL_MS: '2000' }).sqliteBusyTimeoutMs).toBe(500);
    expect(loadConfig({ ...base, SQLITE_BUSY_TIMEOUT_MS: '5000' }).sqliteBusyTimeoutMs).toBe(5000);
    expect(() => loadConfig({ ...base, SQLITE_BUSY_TIMEOUT_MS: '5001' })).toThrow(/SQLITE_BUSY_TIMEOUT_MS/);
  });
});
