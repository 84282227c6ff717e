/**
 * The store contract: one suite every Store adapter runs (docs/invariants.md).
 *
 *   storeContract('sqlite', async () => ({ store, peer, cleanup }));
 *
 * Each test gets a fresh database from `makeStore` and calls `cleanup` afterwards;
 * peers opened by a test are closed before cleanup. Race cases run one side on the test's
 * store and the other through `peer` (its own connection to the same database, on its own
 * thread where the driver is synchronous) when given, else through the same store, and
 * skip with the stated reason when `opts.racesUnsupported` is set. Cases that need time to
 * pass move the fixture's clock (`passTime`) when it has one, else wait for the store's.
 * Other cases a server cannot run are listed in `opts.skip` as "<group> › <case title>"
 * with the reason.
 */
import { afterEach, beforeEach, describe, expect, it, TestRunner } from 'vitest';
import { auditCases } from './store-contract-audit.js';
import { batchCases } from './store-contract-batch.js';
import { commandCases } from './store-contract-commands.js';
import { contactIdCases } from './store-contract-contact-ids.js';
import { deliveryCases } from './store-contract-deliveries.js';
import { inProcessPeer, type RacePeer } from './race-steps.js';
import { untilAfter, type ContractContext, type ContractOptions, type StoreFixture } from './store-contract-helpers.js';
import { incidentCases } from './store-contract-incidents.js';
import { locationCases } from './store-contract-location.js';
import { moderationCases } from './store-contract-moderation.js';
import { outboxCases } from './store-contract-outbox.js';
import { personalCases } from './store-contract-personal.js';
import { raceCases } from './store-contract-races.js';
import { receiptCases } from './store-contract-receipts.js';
import { replyCases } from './store-contract-replies.js';
import { safetyCases } from './store-contract-safety.js';
import { sosCases } from './store-contract-sos.js';
import { timerCases } from './store-contract-timers.js';
import { tokenCases } from './store-contract-tokens.js';
import { duressCases } from './store-contract-duress.js';
import { traceCases } from './store-contract-trace.js';

export type { ContractOptions, StoreFixture } from './store-contract-helpers.js';

export function storeContract(name: string, makeStore: () => Promise<StoreFixture>, opts: ContractOptions = {}): void {
  describe(`store contract: ${name}`, () => {
    let fixture: StoreFixture | undefined;
    let peers: RacePeer[] = [];

    beforeEach(async () => {
      fixture = await makeStore();
    });

    afterEach(async () => {
      const open = peers;
      peers = [];
      for (const p of open) await p.close();
      await fixture?.cleanup();
      fixture = undefined;
    });

    const skips = new Map(Object.entries(opts.skip ?? {}));
    const caseIt: ContractContext['it'] = (title, fn, timeoutMs) => {
      const key = `${TestRunner.getCurrentSuite().name} › ${title}`;
      const reason = skips.get(key);
      skips.delete(key);
      if (reason) it.skip(`[skipped on ${name}: ${reason}] ${title}`, fn);
      else it(title, fn, timeoutMs);
    };

    const ctx: ContractContext = {
      name,
      opts,
      it: caseIt,
      store() {
        if (!fixture) throw new Error('no store: called outside a test');
        return fixture.store;
      },
      async peer() {
        if (!fixture) throw new Error('no store: called outside a test');
        if (!fixture.peer) return inProcessPeer(fixture.store);
        const p = await fixture.peer();
        peers.push(p);
        return p;
      },
      async passTime(t) {
        if (!fixture) throw new Error('no store: called outside a test');
        if (fixture.passTime) await fixture.passTime(t);
        else await untilAfter(fixture.store, t);
      },
    };

    it('ping answers true; now() is a Date', async () => {
      expect(await ctx.store().ping()).toBe(true);
      expect((await ctx.store().now()).getTime()).not.toBeNaN();
    });

    timerCases(ctx);
    incidentCases(ctx);
    deliveryCases(ctx);
    receiptCases(ctx);
    outboxCases(ctx);
    raceCases(ctx);
    commandCases(ctx);
    traceCases(ctx);
    batchCases(ctx);
    locationCases(ctx);
    safetyCases(ctx);
    sosCases(ctx);
    moderationCases(ctx);
    auditCases(ctx);
    personalCases(ctx);
    contactIdCases(ctx);
    tokenCases(ctx);
    duressCases(ctx);
    replyCases(ctx);

    // runs after collection, when every case has consumed its skip entry
    if (opts.skip) it('every entry of the skip list names a case', () => expect([...skips.keys()]).toEqual([]));
  });
}
