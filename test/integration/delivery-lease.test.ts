/**
 * Invariant 5 (issue 35, item 2): the delivery lease covers the whole attempt. Two real
 * dispatchers on one store, each with the real `twilio` client against the fake Twilio
 * server; the first is slow but alive (its send waits for its turn past the lease), the
 * second claims the text once the lease lapsed and sends it. Whatever the slow one does
 * when its turn comes, the contact gets one SOS, and nothing after their all-clear.
 * Also item 6: a follow-up (`moved`) on its way when the person checks in reaches the
 * contact before their all-clear, never after it.
 * Runs on SQLite and, when FerretDB is installed, on the Mongo adapter.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AllClear } from '../../src/app/all-clear.js';
import { SmsBudget } from '../../src/app/sms-budget.js';
import { contactId } from '../helpers/contact-ids.js';
import { deliveryKey, type AttemptResult } from '../../src/domain/delivery.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import type { VigilEvent } from '../../src/realtime/events.js';
import type { Carrier, OutgoingSms } from '../../src/sms/port.js';
import { RateLimitedCarrier } from '../../src/sms/rate-limited.js';
import { TwilioCarrier } from '../../src/sms/twilio.js';
import { MongoStore } from '../../src/store/mongo/mongo-store.js';
import type { Store } from '../../src/store/port.js';
import { Dispatcher, type DispatchSettings } from '../../src/worker/dispatcher.js';
import { FERRET_MISSING, ferretAvailable, startFerretDb, type FerretDb } from '../helpers/ferretdb.js';
import { FakeTwilio } from '../helpers/fake-twilio.js';
import { gate, hookedStore } from '../helpers/slow-store.js';
import { tempSqliteStore } from '../helpers/sqlite-store.js';
import { eventually } from '../helpers/vigil.js';

const log = createLogger({ level: 'silent' });
const FROM = '+15005550006';
/** short enough to lapse in a test, long enough for one request of the carrier's 1 s deadline */
const LEASE_MS = 2500;
const SETTINGS: DispatchSettings = { maxInFlight: 10, leaseMs: LEASE_MS, retry: { maxAttempts: 5, baseMs: 10, capMs: 20 } };

interface Backend {
  name: string;
  open(): Promise<{ store: Store; cleanup(): Promise<void> }>;
}

const sqlite: Backend = {
  name: 'sqlite',
  open: () => tempSqliteStore(),
};

const ferretRunnable = ferretAvailable();
if (!ferretRunnable) console.warn(`delivery lease on the Mongo adapter skipped: ${FERRET_MISSING}`);
let ferret: FerretDb | undefined;
const mongo: Backend = {
  name: 'mongo (ferretdb)',
  async open() {
    ferret ??= await startFerretDb();
    const store = await MongoStore.connect({ uri: ferret.uri, dbName: `vigil_lease_${randomUUID().replace(/-/g, '')}` });
    return { store, cleanup: () => store.close() };
  },
};
afterAll(async () => {
  await ferret?.stop();
});

let twilio: FakeTwilio;
beforeAll(async () => {
  twilio = await FakeTwilio.start();
});
afterAll(async () => {
  await twilio?.close();
});
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const realTwilio = () =>
  new TwilioCarrier({ accountSid: twilio.accountSid, authToken: twilio.authToken, from: FROM, baseUrl: twilio.url, timeoutMs: 1000 });

/** A send that waits (alive, not gone) until the test lets it go, then goes through the real carrier. */
class HeldCarrier implements Carrier {
  readonly name: string;
  readonly held = gate();
  constructor(private readonly inner: Carrier) {
    this.name = inner.name;
  }
  async send(sms: OutgoingSms): Promise<AttemptResult> {
    await this.held.wait();
    return this.inner.send(sms);
  }
}

let phones = 0;
/** a number of its own for each case: the fake Twilio server is shared */
const newPhone = () => `+1415555${String(1000 + ++phones).padStart(4, '0')}`;

/** An expired timer's incident with one SOS text for `phone`; returns the incident and the SOS key. */
async function seed(store: Store, userId: string, phone: string) {
  const contact = { id: contactId(userId, phone), name: 'Kim', phone };
  await store.replaceContacts(userId, [contact]);
  const now = await store.now();
  const armed = await store.armTimer({
    id: `tmr-${userId}`,
    userId,
    startedAt: new Date(now.getTime() - 60_000),
    expiresAt: new Date(now.getTime() - 1),
    displayName: 'Ann',
  });
  if (armed.kind !== 'created') throw new Error(armed.kind);
  const [timer] = await store.claimDueTimers(1, 1);
  const { incident } = await store.openIncident(timer!, 1, `inc-${userId}`);
  const key = deliveryKey(incident.id, contact.id, 'sos');
  await store.addDeliveries(incident, [{ key, contactId: contact.id, contactName: 'Kim', phone, kind: 'sos', body: `SOS ${userId}` }]);
  return { incident, key };
}

function dispatcher(store: Store, carrier: Carrier, replica: string, settings: DispatchSettings = SETTINGS): Dispatcher {
  const d = new Dispatcher(store, carrier, { publish: () => {} }, createMetrics({ replica, collectDefault: false }), log, settings);
  cleanups.push(() => d.stop());
  return d;
}

/** Tick `d` until it has claimed something (the slow one's lease has lapsed), then wait for its sends. */
async function claimAndSend(d: Dispatcher, what: string): Promise<void> {
  await eventually(async () => (await d.tick()) > 0, what, 30_000, 100);
  await d.drain();
}

for (const backend of [sqlite, mongo]) {
  const skip = backend === mongo && !ferretRunnable;
  describe.skipIf(skip)(`delivery lease (${backend.name})`, () => {
    it('invariant 5: a dispatcher slow but alive past its lease never sends: the contact gets one SOS, then the all-clear, nothing after', async () => {
      const { store, cleanup } = await backend.open();
      cleanups.push(cleanup);
      const user = `held-${randomUUID().slice(0, 8)}`;
      const PHONE = newPhone();
      const { incident, key } = await seed(store, user, PHONE);
      const slow = new HeldCarrier(realTwilio());
      const d1 = dispatcher(store, slow, 'r1');
      const d2 = dispatcher(store, realTwilio(), 'r2');

      expect(await d1.tick()).toBe(1); // r1 holds the lease; its send waits
      await slow.held.reached;
      await claimAndSend(d2, 'r2 claiming the SOS once r1’s lease lapsed');
      expect(twilio.acceptedFor(PHONE).map((m) => m.body)).toEqual([`SOS ${user}`]);

      // the person checks in: the all-clear goes out after the SOS
      const events: VigilEvent[] = [];
      const closed = await store.transitionIncident(incident.id, ['active', 'acknowledged'], 'false_alarm', user);
      await new AllClear(
        store,
        { publish: (e) => void events.push(e) },
        new SmsBudget(store, { maxPerIncident: 12, maxPerUserPerDay: 60 }),
      ).complete(closed!);
      await claimAndSend(d2, 'r2 sending the all-clear');
      const bodies = () => twilio.acceptedFor(PHONE).map((m) => m.body);
      expect(bodies()).toHaveLength(2);
      expect(bodies()[0]).toBe(`SOS ${user}`);

      // r1's turn comes at last: it must send nothing (no second SOS, nothing after the all-clear)
      slow.held.open();
      await d1.drain();
      expect(bodies()).toHaveLength(2);
      expect((await store.getDelivery(key))?.status).toBe('sent');
    });

    it('invariant 5: a send waiting for its pacing turn past the lease is not sent: one SOS, whoever claims it again', async () => {
      const { store, cleanup } = await backend.open();
      cleanups.push(cleanup);
      const user = `paced-${randomUUID().slice(0, 8)}`;
      const PHONE = newPhone();
      const { key } = await seed(store, user, PHONE);
      // one send every 5 s, and the turn was just taken: r1's next send waits past its lease
      const paced = new RateLimitedCarrier(realTwilio(), 0.2);
      const taken = await paced.send({ to: '+14155550199', body: 'earlier text', idempotencyKey: 'earlier' });
      expect(taken.ok).toBe(true);
      const d1 = dispatcher(store, paced, 'r1');
      const d2 = dispatcher(store, realTwilio(), 'r2');

      expect(await d1.tick()).toBe(1);
      await claimAndSend(d2, 'r2 claiming the SOS once r1’s lease lapsed');
      expect(twilio.acceptedFor(PHONE)).toHaveLength(1);
      await d1.drain(); // r1's turn came after its lease: it asked again and sent nothing
      expect(twilio.acceptedFor(PHONE)).toHaveLength(1);
      const d = await store.getDelivery(key);
      expect(d).toMatchObject({ status: 'sent', attempts: 2 });
    });

    it('invariant 5 (liveness): a claim that waited before reaching the store still sends: the lease is counted from when the store stamped it', async () => {
      const { store, cleanup } = await backend.open();
      cleanups.push(cleanup);
      const user = `queued-${randomUUID().slice(0, 8)}`;
      const PHONE = newPhone();
      const { key } = await seed(store, user, PHONE);
      // the claim queues behind other work for most of a lease before the store runs it (a loaded
      // FerretDB, a busy pool): the lease it gets starts then, so the whole lease is still ahead
      const queued = hookedStore(store, { claimDeliveries: () => new Promise((r) => setTimeout(r, 1800)) });
      const d = dispatcher(queued, realTwilio(), 'r1', { ...SETTINGS, stallMs: 4000 });
      expect(await d.tick()).toBe(1);
      await d.drain();
      expect(twilio.acceptedFor(PHONE).map((m) => m.body)).toEqual([`SOS ${user}`]);
      expect(await store.getDelivery(key)).toMatchObject({ status: 'sent', attempts: 1 });
    });

    it('invariant 5: a moved follow-up on its way when the person checks in reaches the contact before the all-clear, never after', async () => {
      const { store, cleanup } = await backend.open();
      cleanups.push(cleanup);
      const user = `moved-${randomUUID().slice(0, 8)}`;
      const PHONE = newPhone();
      const { incident } = await seed(store, user, PHONE);
      const fast = dispatcher(store, realTwilio(), 'r2');
      await claimAndSend(fast, 'the SOS going out');
      const contact = contactId(user, PHONE);
      await store.addDeliveries(incident, [
        {
          key: deliveryKey(incident.id, contact, 'moved'),
          contactId: contact,
          contactName: 'Kim',
          phone: PHONE,
          kind: 'moved',
          body: `moved ${user}`,
        },
      ]);
      const slow = new HeldCarrier(realTwilio());
      const d1 = dispatcher(store, slow, 'r1');
      expect(await d1.tick()).toBe(1); // the follow-up is on its way, held before its request
      await slow.held.reached;

      const closed = await store.transitionIncident(incident.id, ['active', 'acknowledged'], 'false_alarm', user);
      await new AllClear(store, { publish: () => {} }, new SmsBudget(store, { maxPerIncident: 12, maxPerUserPerDay: 60 })).complete(
        closed!,
      );
      // the all-clear is due, but its contact's follow-up is still on its way: it waits
      for (let i = 0; i < 3; i++) {
        await fast.tick();
        await fast.drain();
      }
      const bodies = () => twilio.acceptedFor(PHONE).map((m) => m.body);
      expect(bodies()).toEqual([`SOS ${user}`]);

      slow.held.open();
      await d1.drain();
      await claimAndSend(fast, 'the all-clear once the follow-up is out');
      expect(bodies()).toHaveLength(3);
      expect(bodies().slice(0, 2)).toEqual([`SOS ${user}`, `moved ${user}`]);
    });
  });
}
