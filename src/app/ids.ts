import { randomUUID } from 'node:crypto';

/** Ids are random UUIDs with a short type prefix so a log line says what it names. */
export const newId = (prefix: 'tmr' | 'inc' | 'ntf'): string => `${prefix}_${randomUUID()}`;
