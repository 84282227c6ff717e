/** The inbox over REST: newest first, paged, unread, read, read-all, only the owner's. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';

let v: TestVigil;
beforeAll(async () => {
  v = await startTestVigil({}, { manualTicks: true });
});
afterAll(async () => {
  await v?.stop();
});

const seed = async (userId: string, n: number) => {
  for (let i = 0; i < n; i++)
    await v.vigil.store.addNotification({
      id: `ntf_${userId}_${i}`,
      userId,
      key: `k${i}`,
      kind: 'timer_warning',
      title: `t${i}`,
      body: `b${i}`,
    });
};

describe('/v1/me/notifications', () => {
  it('pages newest first with a cursor; unread filter; read one; read all', async () => {
    const ann = v.token('ann-inbox');
    await seed('ann-inbox', 5);
    await seed('bob-inbox', 2);
    const all = (await v.api(ann, 'GET', '/v1/me/notifications')).body;
    expect(all.more).toBe(false);
    expect(all.cursor).toBeUndefined();
    expect(all.notifications).toHaveLength(5);
    const ids: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const r = await v.api(ann, 'GET', `/v1/me/notifications?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      ids.push(...r.body.notifications.map((n: { id: string }) => n.id));
      if (!r.body.more) break;
      cursor = r.body.cursor as string;
    }
    expect(ids).toEqual(all.notifications.map((n: { id: string }) => n.id));

    const first = all.notifications[0].id as string;
    const read = await v.api(ann, 'POST', `/v1/me/notifications/${first}/read`);
    expect(read.status).toBe(200);
    expect(read.body.notification.readAt).toBeTruthy();
    expect((await v.api(ann, 'POST', `/v1/me/notifications/${first}/read`)).body.notification.readAt).toBe(read.body.notification.readAt);
    expect((await v.api(ann, 'GET', '/v1/me/notifications?unread=true')).body.notifications).toHaveLength(4);
    expect((await v.api(ann, 'POST', '/v1/me/notifications/read-all')).body).toEqual({ read: 4 });
    expect((await v.api(ann, 'GET', '/v1/me/notifications?unread=true')).body.notifications).toEqual([]);
  });

  it("invariant 7: another person's notification is not found; theirs stay unread", async () => {
    const ann = v.token('ann-inbox2');
    const r = await v.api(ann, 'POST', '/v1/me/notifications/ntf_bob-inbox_0/read');
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('notification_not_found');
    const bob = (await v.api(v.token('bob-inbox'), 'GET', '/v1/me/notifications?unread=true')).body.notifications;
    expect(bob).toHaveLength(2);
  });

  it('bad input: 400 with a code', async () => {
    const t = v.token('ann-inbox3');
    for (const q of ['unread=yes', 'limit=0', 'limit=501', 'cursor=%25%25', 'cursor=bm9wZQ', 'other=1']) {
      const r = await v.api(t, 'GET', `/v1/me/notifications?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error.code).toMatch(/validation_failed|invalid_cursor/);
    }
    expect((await v.api(t, 'POST', '/v1/me/notifications/read-all', { x: 1 })).status).toBe(400);
    expect((await fetch(`${v.url}/v1/me/notifications`)).status).toBe(401);
  });
});
