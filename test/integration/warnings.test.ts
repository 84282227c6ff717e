/** The nudge before the SOS over Socket.IO and REST, against a real in-process Vigil (SQLite). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../helpers/sockets.js';
import { eventually, startTestVigil, untilPast, type TestVigil } from '../helpers/vigil.js';

let v: TestVigil;
beforeAll(async () => {
  // a 2 s lead: a 4 s timer enters the window 2 s after it is armed
  v = await startTestVigil({ WARNING_BEFORE_SECONDS: '2' }, { manualTicks: true });
});
afterAll(async () => {
  await v?.stop();
});

/** Sweep until the sweep reports a warning (the window opens on the store's clock). */
const sweepUntilWarned = () => eventually(async () => ((await v.vigil.sweeper.sweep()).warned ?? 0) > 0, 'a sweep that warns');

describe('timer.warning', () => {
  it('warns once per deadline (socket + inbox); an extension warns again; I’m safe still wins', async () => {
    const ann = v.token('ann-warn');
    const other = await connect(v.url, v.token('bob-warn'));
    const me = await connect(v.url, ann);
    try {
      const timer = (await v.api(ann, 'POST', '/v1/timers', { durationSeconds: 4 })).body.timer;
      // before the window: nothing
      expect((await v.vigil.sweeper.sweep()).warned).toBeUndefined();
      await sweepUntilWarned();
      await eventually(async () => me.named('timer.warning').length === 1, 'timer.warning');
      expect(me.named('timer.warning')[0]).toMatchObject({ eventId: `timer.warning:${timer.id}:0`, timer: { id: timer.id } });
      await eventually(async () => me.named('notification.created').length === 1, 'notification.created');
      // once: further sweeps do not warn again
      expect((await v.vigil.sweeper.sweep()).warned).toBeUndefined();
      const inbox = (await v.api(ann, 'GET', '/v1/me/notifications?unread=true')).body.notifications;
      expect(inbox).toMatchObject([{ kind: 'timer_warning', timerId: timer.id, title: 'Your timer is about to run out' }]);

      // extend: a new deadline, a new warning
      const ext = await v.api(ann, 'POST', `/v1/timers/${timer.id}/extend`, { seconds: 3 });
      expect(ext.status).toBe(200);
      await sweepUntilWarned();
      await eventually(async () => me.named('timer.warning').length === 2, 'second timer.warning');
      expect(me.named('timer.warning')[1]).toMatchObject({ eventId: `timer.warning:${timer.id}:1` });

      // I'm safe after the warning: no SOS
      expect((await v.api(ann, 'POST', `/v1/timers/${timer.id}/safe`)).body.timer.status).toBe('safe');
      await untilPast(ext.body.timer.expiresAt);
      const r = await v.vigil.sweeper.sweep();
      expect(r.claimed).toBe(0);
      expect(me.named('sos.triggered')).toEqual([]);
      // nobody else hears it
      expect(other.named('timer.warning')).toEqual([]);
      expect(other.named('notification.created')).toEqual([]);
    } finally {
      me.close();
      other.close();
    }
  });

  it('a timer shorter than the lead is not warned', async () => {
    const cy = v.token('cy-warn');
    const timer = (await v.api(cy, 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer;
    await untilPast(timer.expiresAt);
    const r = await v.vigil.sweeper.sweep();
    expect(r.warned).toBeUndefined();
    expect(r.claimed).toBe(1);
    expect((await v.api(cy, 'GET', '/v1/me/notifications')).body.notifications).toEqual([]);
  });
});

describe('GRACE_SECONDS', () => {
  it('delays the SOS past the deadline', async () => {
    const g = await startTestVigil({ GRACE_SECONDS: '600', WARNING_BEFORE_SECONDS: '0' }, { manualTicks: true });
    try {
      const t = g.token('grace');
      const timer = (await g.api(t, 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer;
      await untilPast(timer.expiresAt);
      expect((await g.vigil.sweeper.sweep()).claimed).toBe(0);
      expect((await g.api(t, 'GET', `/v1/timers/${timer.id}`)).body.timer.status).toBe('active');
      // still in time for I'm safe
      expect((await g.api(t, 'POST', `/v1/timers/${timer.id}/safe`)).body.timer.status).toBe('safe');
    } finally {
      await g.stop();
    }
  });
});
