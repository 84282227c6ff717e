/** Graceful stop as Kubernetes needs it: readiness turns 503 at once, liveness stays up, sends in flight finish. */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { AttemptResult } from '../../src/domain/delivery.js';
import type { Carrier, OutgoingSms } from '../../src/sms/port.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { eventually, startTestVigil } from '../helpers/vigil.js';

/** A carrier whose sends wait until the test releases them: keeps a delivery in flight while the test stops Vigil. */
class GatedCarrier implements Carrier {
  readonly name = 'slow';
  started = 0;
  finished = 0;
  release: () => void = () => undefined;
  private readonly gate = new Promise<void>((resolve) => (this.release = resolve));
  async send(sms: OutgoingSms): Promise<AttemptResult> {
    this.started++;
    await this.gate;
    this.finished++;
    return { ok: true, carrier: this.name, providerMessageId: `slow:${sms.idempotencyKey}` };
  }
}

describe('graceful shutdown', () => {
  it('on stop: /readyz answers 503 at once while /livez stays 200, and the send in flight completes and is recorded', async () => {
    const carrier = new GatedCarrier();
    const v = await startTestVigil({}, { carrier });
    let stopped = false;
    try {
      const tok = v.token('drain-user');
      await v.api(tok, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'A', phone: '+14155550100' }] });
      const t = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer;
      await eventually(async () => carrier.started === 1, 'a send in flight');
      expect((await fetch(`${v.url}/readyz`)).status).toBe(200);

      const stopping = v.vigil.stop();
      const ready = await fetch(`${v.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { error: { code: string } }).error.code).toBe('draining');
      expect((await fetch(`${v.url}/livez`)).status).toBe(200);
      const settled = await Promise.race([stopping.then(() => 'stopped'), new Promise((r) => setImmediate(() => r('pending')))]);
      expect(settled, 'stop() must wait for the send in flight').toBe('pending');
      carrier.release();
      await stopping;
      stopped = true;

      expect(carrier.finished).toBe(1);
      // the outcome was recorded before the store closed: read the file again
      const store = await SqliteStore.open({ file: join(v.dataDir, 'vigil.db') });
      const inc = await store.incidentForTimer(t.id);
      const [d] = await store.deliveriesFor([inc!.id]);
      await store.close();
      expect(d).toMatchObject({ status: 'sent', carrier: 'slow', attempts: 1 });
      await expect(fetch(`${v.url}/livez`)).rejects.toThrow();
    } finally {
      carrier.release();
      if (!stopped) await v.vigil.stop();
      await v.stop();
    }
  });
});
