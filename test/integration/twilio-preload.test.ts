/**
 * The twilio library loads its API modules (about 100 ms of synchronous `require` on a
 * 2-core machine) the first time `client.messages` is touched. TwilioCarrier touches it in
 * its constructor, at start-up, so a fresh replica's first SOS text does not stall the event
 * loop in the middle of a burst's escalations (docs/sms.md, "Carrier setup"). Run in a child
 * process: in this one, another test may already have loaded them.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeTwilio } from '../helpers/fake-twilio.js';

const fixture = join(process.cwd(), 'test', 'fixtures', 'twilio-first-send.ts');
let tw: FakeTwilio;

beforeAll(async () => {
  tw = await FakeTwilio.start();
});
afterAll(async () => {
  await tw.close();
});

function firstSend(): Promise<{ ok: boolean; loaded: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, tw.url, tw.accountSid, tw.authToken], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`fixture exited ${code}:\n${out}\n${err}`));
      else resolve(JSON.parse(line) as { ok: boolean; loaded: string[] });
    });
  });
}

it('a fresh TwilioCarrier sends its first text without loading a module (the API modules load at construction)', async () => {
  const r = await firstSend();
  expect(r.ok).toBe(true);
  expect(tw.accepted).toHaveLength(1);
  expect(r.loaded).toEqual([]);
}, 60_000);
