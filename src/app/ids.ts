import { randomFillSync } from 'node:crypto';

/**
 * Ids are UUIDs with a short type prefix so a log line says what it names. They are
 * version 7 (RFC 9562): 48 bits of Unix milliseconds, then 74 random bits. Ordered by time,
 * a burst's new incidents and their delivery keys (`<incidentId>:<contactId>`) land at the
 * end of their indexes instead of on random pages: a 10,000-timer burst writes far fewer
 * pages per commit. An id reveals when it was made, which its record shows anyway
 * (`createdAt`); it is never a secret (every read checks who asks).
 */
const POOL_BYTES = 16 * 256;
const pool = Buffer.alloc(POOL_BYTES);
let poolAt = POOL_BYTES;

export function uuidv7(now: number = Date.now()): string {
  // random bytes from a pool filled 256 ids at a time: one call into the CSPRNG and no
  // Buffer per id (a 10,000 burst makes some 30,000 ids; crypto.randomUUID pools likewise)
  if (poolAt + 16 > POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const b = pool.subarray(poolAt, poolAt + 16);
  poolAt += 16;
  b.writeUIntBE(now, 0, 6);
  b[6] = 0x70 | ((b[6] as number) & 0x0f); // version 7
  b[8] = 0x80 | ((b[8] as number) & 0x3f); // variant 10
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export const newId = (prefix: 'tmr' | 'inc' | 'ntf' | 'drs'): string => `${prefix}_${uuidv7()}`;
