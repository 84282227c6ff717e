/** Network helpers for tests: everything binds to loopback only. */
import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago: the OS picks one for a
 * listener on port 0, which we then close. Another process could take it before
 * the caller binds it; callers that spawn servers retry on a fresh port.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') {
        srv.close();
        reject(new Error('freePort: listener has no TCP address'));
        return;
      }
      const { port } = addr;
      srv.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}
