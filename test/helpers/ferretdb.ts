/**
 * A throwaway FerretDB v1 (MongoDB wire protocol, SQLite backend) for the Mongo store's
 * tests: its own process on a free loopback port with a fresh temporary data directory,
 * telemetry and the debug HTTP listener off. Nothing leaves loopback.
 *
 * The binary is $FERRETDB_BIN or <repo>/.tools/bin/ferretdb (scripts/install-ferretdb.sh).
 * When it is missing, suites skip (`ferretAvailable()` answers false) — except on CI
 * (`process.env.CI` set), where a missing binary is an error: a CI run that silently
 * skips the Mongo suites would prove nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onFreePort, spawnService, type ServiceProcess } from './service-process.js';

export const FERRET_MISSING = 'ferretdb not installed: run scripts/install-ferretdb.sh';
const READY_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 5_000;

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export function ferretBinary(): string {
  return process.env.FERRETDB_BIN || join(REPO_ROOT, '.tools', 'bin', 'ferretdb');
}

/** Whether FerretDB can be run here. On CI a missing binary throws instead of answering false. */
export function ferretAvailable(): boolean {
  let ok = true;
  try {
    accessSync(ferretBinary(), constants.X_OK);
  } catch {
    ok = false;
  }
  if (!ok && process.env.CI) throw new Error(`${FERRET_MISSING} (looked for ${ferretBinary()}): CI must run the MongoDB store suites`);
  return ok;
}

export interface FerretDb {
  /** `mongodb://127.0.0.1:<port>/` */
  readonly uri: string;
  /** SIGTERM (SIGKILL after a few seconds), wait for exit, delete the data directory. Safe to call twice. */
  stop(): Promise<void>;
}

export interface FerretOptions {
  /** where its temporary data directory is made; default the OS temporary directory */
  root?: string;
}

/** Start FerretDB on a free loopback port and wait until it accepts connections. */
export async function startFerretDb(o: FerretOptions = {}): Promise<FerretDb> {
  if (!ferretAvailable()) throw new Error(FERRET_MISSING);
  return onFreePort('ferretdb', async (port) => {
    const server = new Server(port, o.root ?? tmpdir());
    try {
      await server.start();
      return server;
    } catch (err) {
      await server.stop();
      throw err;
    }
  });
}

class Server implements FerretDb {
  readonly uri: string;
  private readonly dir: string;
  private proc: ServiceProcess | undefined;
  private watchdog: ChildProcess | undefined;
  private readonly killWatchdog = () => this.watchdog?.kill('SIGKILL');

  constructor(
    private readonly port: number,
    root: string,
  ) {
    this.uri = `mongodb://127.0.0.1:${port}/`;
    this.dir = mkdtempSync(join(root, 'vigil-ferretdb-'));
  }

  async start(): Promise<void> {
    const args = [
      '--handler=sqlite',
      `--sqlite-url=file:${this.dir}/`,
      `--state-dir=${this.dir}`,
      `--listen-addr=127.0.0.1:${this.port}`,
      '--telemetry=disable',
      '--debug-addr=-',
      '--log-level=warn',
    ];
    this.proc = await spawnService({
      name: 'ferretdb',
      bin: ferretBinary(),
      args,
      port: this.port,
      probe: accepts,
      readyWhat: 'accept connections',
      readyTimeoutMs: READY_TIMEOUT_MS,
      stopTimeoutMs: STOP_TIMEOUT_MS,
      // The exit hook of spawnService covers a normal exit. If the worker is killed (no
      // 'exit' event, e.g. after a failed collection), a watchdog shell sees its stdin pipe
      // close, kills ferretdb and deletes its data directory.
      onSpawn: (child) => {
        if (child.pid === undefined) return;
        const script = 'read _; kill -9 "$1"; rm -rf "$2"';
        this.watchdog = spawn('/bin/sh', ['-c', script, 'ferretdb-watchdog', String(child.pid), this.dir], {
          stdio: ['pipe', 'ignore', 'ignore'],
        });
        this.watchdog.unref();
        (this.watchdog.stdin as Socket | null)?.unref();
        process.on('exit', this.killWatchdog);
      },
    });
  }

  async stop(): Promise<void> {
    // first the watchdog, so that it can never kill a recycled pid
    this.killWatchdog();
    process.off('exit', this.killWatchdog);
    this.watchdog = undefined;
    const proc = this.proc;
    this.proc = undefined;
    await proc?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A TCP connection to the port succeeds. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => done(true));
  });
}
