/**
 * A throwaway server process for tests (redis-server, ferretdb): spawned on a loopback
 * port, its last output kept for error messages, ready when `probe` says so, stopped
 * with SIGTERM (SIGKILL after a timeout), and killed by a process `exit` hook should the
 * test run end without stopping it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './net.js';

export interface ServiceSpec {
  /** for messages: `redis-server`, `ferretdb` */
  name: string;
  bin: string;
  args: string[];
  port: number;
  /** true once the server serves (one short attempt) */
  probe(port: number): Promise<boolean>;
  /** for messages: what `probe` waits for, e.g. "answer PING" */
  readyWhat: string;
  readyTimeoutMs: number;
  stopTimeoutMs: number;
  /** called right after spawning, before waiting (e.g. to start a watchdog) */
  onSpawn?(child: ChildProcess): void;
}

export interface ServiceProcess {
  readonly child: ChildProcess;
  /** false once the process has exited, whatever ended it */
  running(): boolean;
  /** SIGTERM, SIGKILL after `stopTimeoutMs`, then wait for the exit. Safe to call twice. */
  stop(): Promise<void>;
}

/** Spawn the server and wait until it is ready; on failure it is stopped and the error names its output. */
export async function spawnService(s: ServiceSpec): Promise<ServiceProcess> {
  const child = spawn(s.bin, s.args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-4_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const killOnExit = () => child.kill('SIGKILL');
  let exitCode: number | string | null | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exitCode = code ?? signal;
      process.off('exit', killOnExit);
      resolve();
    });
  });
  process.on('exit', killOnExit);
  s.onSpawn?.(child);

  const stop = async () => {
    if (exitCode !== undefined) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), s.stopTimeoutMs);
    try {
      await exited;
    } finally {
      clearTimeout(timer);
    }
  };
  const where = `${s.name} on port ${s.port}`;
  const deadline = Date.now() + s.readyTimeoutMs;
  for (;;) {
    if (exitCode !== undefined) throw new Error(`${where} exited (${exitCode}) before it would ${s.readyWhat}:\n${output}`);
    if (await s.probe(s.port)) return { child, stop, running: () => exitCode === undefined };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${where} did not ${s.readyWhat} within ${s.readyTimeoutMs} ms:\n${output}`);
    }
    await sleep(25);
  }
}

/**
 * Start something on a free port. The port was free when picked, but another process may
 * take it first: a few fresh ports are tried before giving up.
 */
export async function onFreePort<T>(name: string, start: (port: number) => Promise<T>): Promise<T> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await start(await freePort());
    } catch (err) {
      lastError = err;
    }
  }
  throw new Error(`could not start ${name}`, { cause: lastError });
}
