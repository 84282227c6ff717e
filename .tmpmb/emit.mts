import { createServer } from 'node:http';
import { PerformanceObserver } from 'node:perf_hooks';
import { pino } from 'pino';
import { Server } from 'socket.io';
import { connectRedisFanout } from '../src/realtime/redis-adapter.js';
import { startRedis } from '../test/helpers/redis-server.js';

const mode = (process.argv[2] ?? 'sharded') as 'sharded' | 'classic' | 'none';
const split = process.argv[3] === 'split';
let gcMs = 0; let gcN = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries()) { gcMs += e.duration; gcN++; } }).observe({ entryTypes: ['gc'] });
const redis = await startRedis();
const fan = mode === 'none' ? undefined : await connectRedisFanout(redis.url, pino({ level: 'silent' }), { mode });
const http = createServer();
const io = new Server(http, fan ? { adapter: fan.adapter } : {});
const payload = (i: number) => ({ eventId: `sos.triggered:inc_${i}`, incident: { id: `inc_0193a${i}`, timerId: `tmr_${i}`, userId: `burst-${i}`, status: 'active', deadline: new Date().toISOString(), createdAt: new Date().toISOString(), updatedAt: new Date().toISOString(), location: { name: 'Cafe Central, 12 Main Street', lat: 48.2, lng: 16.37 }, displayName: 'Bench person ' + i, sources: ['timer'], meeting: { with: 'A stranger from the app', note: 'coffee' } } });
const t0 = performance.now(); const cpu0 = process.cpuUsage();
for (let g = 0; g < 200; g++) {
  for (let i = 0; i < 50; i++) {
    const n = g * 50 + i;
    for (const name of ['timer.expired', 'sos.triggered']) {
      if (split) { io.to(`user:burst-${n}`).except('admins').emit(name, payload(n)); io.to('admins').emit(name, payload(n)); }
      else io.to([`user:burst-${n}`, 'admins']).emit(name, payload(n));
    }
  }
  await new Promise((r) => setImmediate(r));
}
await new Promise((r) => setTimeout(r, 500));
const cpu = process.cpuUsage(cpu0);
console.log(mode, split ? 'split' : 'union', 'wall', Math.round(performance.now() - t0 - 500), 'ms cpu', Math.round((cpu.user + cpu.system) / 1000), 'ms gc', Math.round(gcMs), 'ms in', gcN);
io.close(); await fan?.close(); await redis.stop(); process.exit(0);
