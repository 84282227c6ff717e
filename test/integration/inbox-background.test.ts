/**
 * The inbox entry a sent SOS text records ("your contacts were texted") is written in the
 * background: the entries of a 50 ms window share one store write, so a burst of texts costs
 * one commit a window, not one a text (on a shared SQLite file every commit is an fsync that
 * the other processes queue behind). A fact recorded twice (two contacts of one incident) is
 * still one entry, announced once.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotificationService } from '../../src/app/notifications.js';
import { contactsTextedNotification } from '../../src/domain/notification.js';
import type { VigilEvent } from '../../src/realtime/events.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { tempSqliteStore, type TempSqliteStore } from '../helpers/sqlite-store.js';

let tmp: TempSqliteStore;
let store: SqliteStore;

beforeEach(async () => {
  tmp = await tempSqliteStore();
  store = tmp.store;
});

afterEach(async () => {
  await tmp.cleanup();
});

/** the store's addNotifications, counting its calls */
function countWrites(s: SqliteStore): { calls: number } {
  const seen = { calls: 0 };
  const original = s.addNotifications.bind(s);
  s.addNotifications = (list) => {
    seen.calls++;
    return original(list);
  };
  return seen;
}

const turn = () => new Promise((r) => setImmediate(r));

describe('inbox entries of sent texts', () => {
  it('one write a window: entries recorded over several turns share one store write; a repeated fact is one entry, announced once', async () => {
    const events: VigilEvent[] = [];
    const writes = countWrites(store);
    // a window far longer than the five turns take, also on a loaded machine
    const inbox = new NotificationService(store, { publish: (e) => events.push(e) }, 1000);
    const recorded: Promise<{ id: string }>[] = [];
    for (const [i, incident] of ['i1', 'i2', 'i3', 'i1', 'i4'].entries()) {
      recorded.push(inbox.recordInBackground(contactsTextedNotification({ id: incident, userId: 'u-inbox' }, `ntf-${i}`)));
      await turn(); // each in its own turn, as the texts' answers arrive
    }
    const ids = (await Promise.all(recorded)).map((n) => n.id);
    expect(writes.calls).toBe(1);
    expect(ids).toEqual(['ntf-0', 'ntf-1', 'ntf-2', 'ntf-0', 'ntf-4']); // the repeat answers the first entry
    expect(events.filter((e) => e.name === 'notification.created')).toHaveLength(4);
    const listed = await store.listNotifications('u-inbox');
    expect(listed.map((n) => n.incidentId).sort()).toEqual(['i1', 'i2', 'i3', 'i4']);
  });

  it('record() does not wait for a window: facts of separate turns are separate writes', async () => {
    const writes = countWrites(store);
    const inbox = new NotificationService(store, { publish: () => undefined }, 50);
    for (const incident of ['j1', 'j2']) {
      await inbox.record(contactsTextedNotification({ id: incident, userId: 'u-inbox2' }, `ntf-${incident}`));
    }
    expect(writes.calls).toBe(2);
    expect(await store.listNotifications('u-inbox2')).toHaveLength(2);
  });
});
