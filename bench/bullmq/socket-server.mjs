/**
 * A Socket.IO 4.8 server on its own loopback port with `@socket.io/redis-adapter` (sharded,
 * dynamic subscriptions, as Vigil's cluster) on its own Redis connections. Every socket is a
 * moderator's: it joins `admins`, then hears `ready`, as on Vigil.
 *
 * Imported by bullmq-run.mjs (server A, the one its jobs emit on), and run as a process of its
 * own for server B, where the harness's moderator socket connects, so that every event
 * crosses the adapter between two processes as it does between Vigil's replicas:
 *   fork('socket-server.mjs', [redisUrl])  → { type: 'listening', url }  ← { type: 'stop' }
 */
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { createShardedAdapter } from '@socket.io/redis-adapter';
import { createClient } from 'redis';
import { Server } from 'socket.io';

export const ADMINS = 'admins';

export async function socketServer(redisUrl) {
  const pub = createClient({ url: redisUrl, commandOptions: { timeout: 0 } });
  const sub = pub.duplicate({ commandOptions: {} });
  for (const c of [pub, sub]) c.on('error', (err) => process.stderr.write(`socket.io redis: ${err.message}\n`));
  await Promise.all([pub.connect(), sub.connect()]);
  const http = createServer();
  const io = new Server(http, {
    transports: ['websocket'],
    adapter: createShardedAdapter(pub, sub, { channelPrefix: 'bench:socket.io', subscriptionMode: 'dynamic' }),
  });
  io.on('connection', (socket) => {
    socket.join(ADMINS);
    socket.emit('ready');
  });
  await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    io,
    url: `http://127.0.0.1:${http.address().port}`,
    async close() {
      await io.close();
      await Promise.allSettled([sub.close(), pub.close()]);
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const server = await socketServer(process.argv[2]);
  const stop = async () => {
    await server.close();
    process.exit(0);
  };
  process.on('message', (m) => m?.type === 'stop' && void stop());
  process.on('disconnect', () => void stop());
  process.send({ type: 'listening', url: server.url });
}
