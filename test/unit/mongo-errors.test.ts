/**
 * The MongoDB store's error classes: a connection error the driver lets through unwrapped
 * (EPIPE on a socket the server just closed) is the store being unavailable (503, retried by
 * the sweep), never a bug (500, counted toward dead-lettering). Seen once in the whole suite:
 * mongo-store.test.ts "ping answers false and operations fail as unavailable" got a raw EPIPE.
 */
import { describe, expect, it } from 'vitest';
import { isTransient } from '../../src/domain/errors.js';
import { unavailableOr } from '../../src/store/mongo/errors.js';

const socketError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('mongo store errors', () => {
  it.each(['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT'])('a raw %s from the connection is store_unavailable, transient', (code) => {
    const mapped = unavailableOr('getTimer', socketError(code, 'This socket has been ended by the other party'));
    expect(mapped).toMatchObject({ kind: 'unavailable', code: 'store_unavailable' });
    expect(isTransient(mapped)).toBe(true);
  });

  it('an error with another code, or none, is left as it is (a bug stays a bug)', () => {
    const other = socketError('ERR_INVALID_ARG_TYPE', 'bad argument');
    expect(unavailableOr('getTimer', other)).toBe(other);
    const plain = new Error('boom');
    expect(unavailableOr('getTimer', plain)).toBe(plain);
  });
});
