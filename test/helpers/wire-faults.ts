/**
 * A TCP proxy between the MongoDB driver and a Mongo-wire server (FerretDB in tests) that
 * injects faults a single server cannot produce: a reply carrying a `writeConcernError`
 * (wtimeout, code 64) after the write was applied or instead of applying it, a command
 * answered with an error, the connection dropped after the server applied a write
 * but before its reply reached the driver, or a command swallowed (a peer that accepted the
 * connection and never answers). The driver and the adapter run unchanged;
 * only the bytes on the wire differ. Loopback only.
 *
 * Frames are OP_MSG (opcode 2013); anything else (the legacy OP_QUERY handshake) passes
 * through untouched. Only the command name and fields of the body section are read.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import mongoose from 'mongoose';

type Doc = Record<string, unknown>;
const { BSON } = mongoose.mongo;

const OP_MSG = 2013;
const HEADER = 16;

/** What the server would say when `w: majority` timed out: the write stands on the primary only. */
export const WTIMEOUT = {
  code: 64,
  codeName: 'WriteConcernFailed',
  errmsg: 'waiting for replication timed out',
  errInfo: { wtimeout: true },
};

export type FaultAction =
  /** forward; the reply gains `writeConcernError` (applied, unconfirmed) */
  | { kind: 'unconfirmed' }
  /** never forwarded; answered `{ok: 1, n: 0, writeConcernError}` (not applied, unconfirmed) */
  | { kind: 'unconfirmed-not-applied' }
  /** never forwarded; answered `{ok: 0, ...error}` */
  | { kind: 'error'; error: { code: number; codeName: string; errmsg: string } }
  /** forward, wait for the server's reply, then drop the driver's connection instead of passing it on */
  | { kind: 'hangup' }
  /** never forwarded, never answered: the connection stays open and silent (a hung server) */
  | { kind: 'silent' };

export interface Fault {
  /** the command to hit, e.g. `(c) => 'findAndModify' in c` */
  match: (command: Doc) => boolean;
  action: FaultAction;
}

export interface FaultProxy {
  /** `mongodb://127.0.0.1:<proxy port>/` */
  readonly uri: string;
  /** arm a fault for the next matching command (one shot; faults fire in the order armed) */
  inject(f: Fault): void;
  /** faults armed but not yet fired */
  pending(): number;
  stop(): Promise<void>;
}

interface Frame {
  raw: Buffer;
  requestId: number;
  opCode: number;
  body?: Doc;
}

function* frames(buf: { data: Buffer }): Generator<Frame> {
  while (buf.data.length >= 4) {
    const len = buf.data.readInt32LE(0);
    if (buf.data.length < len) return;
    const raw = buf.data.subarray(0, len);
    buf.data = buf.data.subarray(len);
    const opCode = raw.readInt32LE(12);
    const frame: Frame = { raw, requestId: raw.readInt32LE(4), opCode };
    // the body section (kind byte 0) right after the flag bits; document sequences (kind 1, e.g. an insert's documents) may follow
    if (opCode === OP_MSG && raw[HEADER + 4] === 0) {
      const start = HEADER + 5;
      frame.body = BSON.deserialize(raw.subarray(start, start + raw.readInt32LE(start)), { promoteBuffers: true });
    }
    yield frame;
  }
}

function reply(responseTo: number, body: Doc): Buffer {
  const doc = Buffer.from(BSON.serialize(body));
  const out = Buffer.alloc(HEADER + 5 + doc.length);
  out.writeInt32LE(out.length, 0);
  out.writeInt32LE(0x7fff0000 + (responseTo & 0xffff), 4);
  out.writeInt32LE(responseTo, 8);
  out.writeInt32LE(OP_MSG, 12);
  out.writeUInt32LE(0, HEADER);
  out.writeUInt8(0, HEADER + 4);
  doc.copy(out, HEADER + 5);
  return out;
}

export async function startFaultProxy(targetUri: string): Promise<FaultProxy> {
  const m = /^mongodb:\/\/([^:/]+):(\d+)/.exec(targetUri);
  if (!m?.[1] || !m[2]) throw new Error(`fault proxy: cannot read host:port from ${targetUri}`);
  const target = { host: m[1], port: Number(m[2]) };
  const faults: Fault[] = [];
  const sockets = new Set<Socket>();

  const take = (command: Doc): FaultAction | undefined => {
    const i = faults.findIndex((f) => f.match(command));
    return i < 0 ? undefined : faults.splice(i, 1)[0]?.action;
  };

  const server: Server = createServer((client) => {
    const upstream = connect(target);
    sockets.add(client).add(upstream);
    const onReply = new Map<number, (body: Doc, raw: Buffer) => void>();
    const fromClient = { data: Buffer.alloc(0) };
    const fromServer = { data: Buffer.alloc(0) };
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);

    // a frame this proxy cannot read ends the connection (the driver sees a network error) instead of crashing the test process
    const guarded = (fn: (chunk: Buffer) => void) => (chunk: Buffer) => {
      try {
        fn(chunk);
      } catch {
        close();
      }
    };

    client.on(
      'data',
      guarded((chunk) => {
        fromClient.data = Buffer.concat([fromClient.data, chunk]);
        for (const f of frames(fromClient)) {
          const action = f.body ? take(f.body) : undefined;
          if (!action) {
            upstream.write(f.raw);
            continue;
          }
          switch (action.kind) {
            case 'unconfirmed':
              onReply.set(f.requestId, (body) => client.write(reply(f.requestId, { ...body, writeConcernError: WTIMEOUT })));
              upstream.write(f.raw);
              break;
            case 'unconfirmed-not-applied':
              client.write(
                reply(f.requestId, {
                  ok: 1,
                  n: 0,
                  nModified: 0,
                  lastErrorObject: { n: 0, updatedExisting: false },
                  value: null,
                  writeConcernError: WTIMEOUT,
                }),
              );
              break;
            case 'error':
              client.write(reply(f.requestId, { ok: 0, ...action.error }));
              break;
            case 'hangup':
              onReply.set(f.requestId, () => close());
              upstream.write(f.raw);
              break;
            case 'silent':
              break;
          }
        }
      }),
    );

    upstream.on(
      'data',
      guarded((chunk) => {
        fromServer.data = Buffer.concat([fromServer.data, chunk]);
        for (const f of frames(fromServer)) {
          const responseTo = f.raw.readInt32LE(8);
          const handle = onReply.get(responseTo);
          onReply.delete(responseTo);
          if (handle && f.body) handle(f.body, f.raw);
          else client.write(f.raw);
        }
      }),
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('fault proxy: no TCP address');

  let stopping: Promise<void> | undefined;
  return {
    uri: `mongodb://127.0.0.1:${addr.port}/`,
    inject: (f) => void faults.push(f),
    pending: () => faults.length,
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      });
      return stopping;
    },
  };
}
