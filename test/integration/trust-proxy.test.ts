/**
 * A spoofed X-Forwarded-For behind an untrusted hop. The test client is a proxy on the same
 * host (loopback, trusted by default) that forwards for a client at 10.0.0.7: a host on a
 * private network, which by default is not a proxy Vigil trusts. That client writes its own
 * X-Forwarded-For, a new made-up address on every request, and the proxy appends 10.0.0.7.
 * The per-address budget must count every request against 10.0.0.7.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';

const LIMITS = { RATE_LIMIT_PER_IP: '5', RATE_LIMIT_WINDOW_MS: '60000', RATE_LIMIT_HOLD_MS: '0' };

/** Anonymous requests as the loopback proxy forwards them: the client's own header, then its address. */
async function statuses(v: TestVigil, hop: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(`${v.url}/v1/timers`, { headers: { 'x-forwarded-for': `198.51.100.${i + 1}, ${hop}` } });
    await res.arrayBuffer();
    out.push(res.status);
  }
  return out;
}

describe('TRUST_PROXY and the per-address budget', () => {
  let v: TestVigil | undefined;
  afterEach(async () => {
    await v?.stop();
    v = undefined;
  });

  it('by default, a client on a private network cannot pick its address with X-Forwarded-For', async () => {
    v = await startTestVigil({ ...LIMITS }, { manualTicks: true });
    const codes = await statuses(v, '10.0.0.7', 7);
    // 5 anonymous requests from 10.0.0.7, then its budget is spent whatever the header claimed
    expect(codes).toEqual([401, 401, 401, 401, 401, 429, 429]);
    // another client behind the same proxy has a budget of its own
    expect(await statuses(v, '10.0.0.8', 1)).toEqual([401]);
  });

  it('a hop listed in TRUST_PROXY (an ingress subnet) passes on the address before it', async () => {
    v = await startTestVigil({ ...LIMITS, TRUST_PROXY: 'loopback, 10.0.0.0/24' }, { manualTicks: true });
    // each request now comes from the address 10.0.0.7 forwarded for: a different one each time
    expect(await statuses(v, '10.0.0.7', 7)).toEqual([401, 401, 401, 401, 401, 401, 401]);
  });

  it('with TRUST_PROXY=false the connecting address counts, whatever the headers say', async () => {
    v = await startTestVigil({ ...LIMITS, TRUST_PROXY: 'false' }, { manualTicks: true });
    const a = await statuses(v, '10.0.0.7', 3);
    const b = await statuses(v, '10.0.0.8', 3);
    expect([...a, ...b]).toEqual([401, 401, 401, 401, 401, 429]);
  });
});
