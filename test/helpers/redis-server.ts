/**
 * A throwaway `redis-server` for tests: its own process on a free loopback port,
 * nothing persisted (`--save "" --appendonly no`), so a restart starts empty —
 * exactly what a flushed or restarted production Redis looks like.
 *
 * When the binary is missing, suites skip with `describe.skipIf(!redisAvailable())`,
 * except on CI (`process.env.CI` set), where a missing binary is an error: a CI run
 * that silently skips the Redis suites would prove nothing.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './net.js';

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
  // The port is free when picked but another process may grab it before redis binds:
  // try a few fresh ports before giving up.
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const server = new Server(port);
    try {
      await server.start();
      return server;
    } catch (err) {
      lastError = err;
      await server.stop();
    }
  }
  throw new Error('could not start redis-server', { cause: lastError });
}

class Server implements RedisServer {
  readonly url: string;
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;
  private readonly killOnExit = () => this.child?.kill('SIGKILL');

  constructor(readonly port: number) {
    this.url = `redis://127.0.0.1:${port}`;
  }

  pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    if (this.child) throw new Error(`redis-server on port ${this.port} is already running`);
    const args = [
      '--port', String(this.port),
      '--bind', '127.0.0.1',
      '--save', '',
      '--appendonly', 'no',
      '--daemonize', 'no',
      '--dir', tmpdir(),
    ];
    const child = spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let output = '';
    const collect = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-4_000);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    let exitCode: number | string | null | undefined;
    this.exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        exitCode = code ?? signal;
        if (this.child === child) this.child = undefined;
        process.off('exit', this.killOnExit);
        resolve();
      });
    });
    // A test run that dies without calling stop() must not leave redis-server behind.
    process.on('exit', this.killOnExit);

    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (exitCode !== undefined) {
        throw new Error(`redis-server on port ${this.port} exited (${exitCode}) before answering PING:\n${output}`);
      }
      if (await ping(this.port)) return;
      if (Date.now() > deadline) {
        throw new Error(`redis-server on port ${this.port} did not answer PING within ${READY_TIMEOUT_MS} ms:\n${output}`);
      }
      await sleep(25);
    }
  }

  async stop(): Promise<void> {
    const child = this.child;
    const exited = this.exited;
    if (!child || !exited) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    try {
      await exited;
    } finally {
      clearTimeout(timer);
    }
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
