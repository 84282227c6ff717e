/**
 * Shared pieces of the sms-*.test.ts files: env for a Vigil whose carriers are the local
 * fakes, a person with contacts and an expired timer, a dispatcher driven by hand, a
 * seeded random, and a proxy that loses answers (the ambiguous timeout).
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { FakeFast2Sms } from '../helpers/fake-fast2sms.js';
import type { FakeTwilio } from '../helpers/fake-twilio.js';
import { eventually, type TestVigil } from '../helpers/vigil.js';

export const FROM = '+15005550006';

/** Env that makes Vigil's own config choose the real Twilio client, pointed at `baseUrl`. */
export const twilioEnv = (tw: FakeTwilio, baseUrl = tw.url): Record<string, string> => ({
  TWILIO_ACCOUNT_SID: tw.accountSid,
  TWILIO_AUTH_TOKEN: tw.authToken,
  TWILIO_FROM: FROM,
  TWILIO_BASE_URL: baseUrl,
  TWILIO_TIMEOUT_MS: '2000',
});

export const fast2smsEnv = (f2: FakeFast2Sms): Record<string, string> => ({
  FAST2SMS_API_KEY: f2.apiKey,
  FAST2SMS_BASE_URL: f2.url,
  FAST2SMS_TIMEOUT_MS: '2000',
});

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface DeliveryView {
  key: string;
  incidentId: string;
  contactId: string;
  contactName: string;
  phone: string;
  kind: 'sos' | 'all_clear';
  status: string;
  attempts: number;
  carrier?: string;
  lastError?: string;
  updatedAt: string;
}

export interface IncidentView {
  id: string;
  timerId: string;
  userId: string;
  status: string;
  createdAt: string;
  deliveries: DeliveryView[];
}

/** Save contacts, arm a timer of `seconds`, return it (the caller lets it run out). */
export async function armWithContacts(
  v: TestVigil,
  user: string,
  phones: string[],
  timer: { durationSeconds: number; locationName?: string; location?: { lat: number; lng: number } } = { durationSeconds: 1 },
  name?: string,
): Promise<{ token: string; timerId: string; expiresAt: number }> {
  const token = v.token(user, { name });
  const c = await v.api(token, 'PUT', '/v1/me/contacts', { contacts: phones.map((phone, i) => ({ name: `Contact ${i + 1}`, phone })) });
  if (c.status !== 200) throw new Error(`contacts: ${c.status} ${JSON.stringify(c.body)}`);
  const t = await v.api(token, 'POST', '/v1/timers', timer);
  if (t.status !== 201) throw new Error(`arm: ${t.status} ${JSON.stringify(t.body)}`);
  return { token, timerId: t.body.timer.id as string, expiresAt: Date.parse(t.body.timer.expiresAt as string) };
}

/** Wait (wall clock) until `at` has passed, then sweep by hand. */
export async function expireAndSweep(v: TestVigil, at: number): Promise<void> {
  const wait = at - Date.now() + 20;
  if (wait > 0) await sleep(wait);
  const r = await v.vigil.sweeper.sweep();
  if (r.outcome === 'failed' || r.failed > 0) throw new Error(`sweep failed: ${JSON.stringify(r)}`);
}

/** Every incident (with deliveries) as moderators see it. */
export async function incidents(v: TestVigil): Promise<IncidentView[]> {
  const r = await v.api(v.token('moderator', { admin: true }), 'GET', '/v1/admin/incidents?limit=500');
  if (r.status !== 200) throw new Error(`admin incidents: ${r.status}`);
  return r.body.incidents as IncidentView[];
}

export async function incidentOf(v: TestVigil, timerId: string): Promise<IncidentView> {
  return eventually(async () => (await incidents(v)).find((i) => i.timerId === timerId), `incident of ${timerId}`);
}

/** One dispatch round by hand: claim what is due, wait for every send to be recorded. */
export async function dispatchRound(v: TestVigil): Promise<number> {
  const n = await v.vigil.dispatcher.tick();
  await v.vigil.dispatcher.drain();
  return n;
}

/**
 * An HTTP proxy in front of a fake carrier that, with probability `lossRatio`, lets the
 * request through (the carrier accepts the message) and then never answers: the
 * client times out without knowing the message went out — the ambiguous failure the
 * Twilio adapter resolves by looking the message up before sending it again.
 */
export class LossyProxy {
  dropped = 0;
  forwarded = 0;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private port = 0;

  private constructor(
    private readonly target: URL,
    private readonly lossRatio: number,
    private readonly random: () => number,
  ) {
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  static async start(target: string, lossRatio: number, random: () => number): Promise<LossyProxy> {
    const p = new LossyProxy(new URL(target), lossRatio, random);
    await new Promise<void>((resolve) => p.server.listen(0, '127.0.0.1', resolve));
    p.port = (p.server.address() as AddressInfo).port;
    return p;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.forwarded++;
    const upstream = request(
      {
        host: this.target.hostname,
        port: this.target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: this.target.host },
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('end', () => {
          if (this.random() < this.lossRatio) {
            this.dropped++;
            return; // the carrier has it; the client will never know
          }
          if (res.destroyed) return;
          res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(chunks));
        });
      },
    );
    upstream.on('error', () => res.destroy());
    // the client gave up (its timeout): stop waiting upstream too
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      for (const s of this.sockets) s.destroy();
    });
  }
}
