/**
 * A throwaway `redis-server` for tests: its own process on a free loopback port,
 * nothing persisted (`--save "" --appendonly no`), so a restart starts empty —
 * exactly what a flushed or restarted production Redis looks like.
 *
 * When the binary is missing, suites skip with `describe.skipIf(!redisAvailable())`,
 * except on CI (`process.env.CI` set), where a missing binary is an error: a CI run
 * that silently skips the Redis suites would prove nothing.
 */
import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { onFreePort, spawnService, type ServiceProcess } from './service-process.js';

const BINARY = 'redis-server';
export const REDIS_MISSING = 'redis-server not installed';
const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

export interface RedisServer {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** SIGTERM, then wait for the process to exit (SIGKILL after a few seconds). Safe to call twice. */
  stop(): Promise<void>;
  /** Start again on the same port (after `stop()`); the data set starts empty. */
  start(): Promise<void>;
  /** Process id while running. */
  pid(): number | undefined;
}

let installed: boolean | undefined;

/** Whether `redis-server` can be run here. On CI a missing binary throws instead of answering false. */
export function redisAvailable(): boolean {
  if (installed === undefined) {
    const probe = spawnSync(BINARY, ['--version'], { stdio: 'ignore' });
    installed = probe.error === undefined && probe.status === 0;
  }
  if (!installed && process.env.CI) {
    throw new Error(`${REDIS_MISSING}: CI must run the Redis suites (apt-get install redis-server)`);
  }
  return installed;
}

/** Start a fresh redis-server on a free loopback port and wait until it answers PING. */
export async function startRedis(): Promise<RedisServer> {
  if (!redisAvailable()) throw new Error(`${REDIS_MISSING}: cannot start a test Redis`);
  return onFreePort('redis-server', async (port) => {
    const server = new Server(port);
    await server.start();
    return server;
  });
}

class Server implements RedisServer {
  readonly url: string;
  private proc: ServiceProcess | undefined;

  constructor(readonly port: number) {
    this.url = `redis://127.0.0.1:${port}`;
  }

  pid(): number | undefined {
    return this.proc?.running() ? this.proc.child.pid : undefined;
  }

  async start(): Promise<void> {
    if (this.proc?.running()) throw new Error(`redis-server on port ${this.port} is already running`);
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
      '--dir',
      tmpdir(),
    ];
    this.proc = await spawnService({
      name: 'redis-server',
      bin: BINARY,
      args,
      port: this.port,
      probe: ping,
      readyWhat: 'answer PING',
      readyTimeoutMs: READY_TIMEOUT_MS,
      stopTimeoutMs: STOP_TIMEOUT_MS,
    });
  }

  async stop(): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    await proc?.stop();
  }
}

/** One raw RESP `PING` on a fresh socket; true when the answer is `+PONG`. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}
