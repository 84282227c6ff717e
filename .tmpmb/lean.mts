import { PerformanceObserver } from 'node:perf_hooks';
import { createClient } from 'redis';
import { startRedis } from '../test/helpers/redis-server.js';
let gcMs = 0; let gcN = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries()) { gcMs += e.duration; gcN++; } }).observe({ entryTypes: ['gc'] });
const redis = await startRedis();
const pub = createClient({ url: redis.url, commandOptions: { timeout: 0 } }); await pub.connect();
const payload = (i: number) => ({ eventId: `sos.triggered:inc_${i}`, incident: { id: `inc_0193a${i}`, timerId: `tmr_${i}`, userId: `burst-${i}`, status: 'active', deadline: new Date().toISOString(), createdAt: new Date().toISOString(), updatedAt: new Date().toISOString(), location: { name: 'Cafe Central, 12 Main Street', lat: 48.2, lng: 16.37 }, displayName: 'Bench person ' + i, sources: ['timer'], meeting: { with: 'A stranger from the app', note: 'coffee' } } });
const t0 = performance.now(); const cpu0 = process.cpuUsage();
const batch = process.argv[2] === 'batch';
for (let g = 0; g < 200; g++) {
  const admins: string[] = [];
  for (let i = 0; i < 50; i++) {
    const n = g * 50 + i;
    for (const name of ['timer.expired', 'sos.triggered']) {
      const body = JSON.stringify(payload(n));
      const m = `["${name}",${body}]`;
      void pub.sPublish(`vigil:ev:user:burst-${n}`, m).catch(() => 0);
      if (batch) admins.push(m); else void pub.sPublish('vigil:ev:admins', m).catch(() => 0);
    }
  }
  if (batch) void pub.sPublish('vigil:ev:admins', `[${admins.join(',')}]`).catch(() => 0);
  await new Promise((r) => setImmediate(r));
}
await new Promise((r) => setTimeout(r, 500));
const cpu = process.cpuUsage(cpu0);
console.log('lean', batch ? 'admins batched' : 'per event', 'wall', Math.round(performance.now() - t0 - 500), 'ms cpu', Math.round((cpu.user + cpu.system) / 1000), 'ms gc', Math.round(gcMs), 'ms in', gcN);
await pub.close(); await redis.stop(); process.exit(0);
