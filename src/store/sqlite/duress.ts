/** The duress PIN on the SQLite store: one row per person (SQL in ./duress-statements.ts). */
import type { DuressSecret } from '../port-duress.js';
import { read, write } from './ctx.js';

export const setDuressPin = write((c, userId: string, s: DuressSecret): void => {
  c.st.duressSet.run({ userId, salt: s.salt, hash: s.hash, cost: s.cost, now: c.clock() });
});

export const getDuressPin = read((c, userId: string): DuressSecret | null => {
  const row = c.st.duressGet.get(userId) as DuressSecret | undefined;
  return row ? { salt: row.salt, hash: row.hash, cost: row.cost } : null;
});

export const deleteDuressPin = write((c, userId: string): boolean => c.st.duressDelete.run(userId).changes > 0);
