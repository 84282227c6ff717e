/**
 * Every SQL statement of the SQLite store, prepared once when the store opens. Each area keeps
 * its statements beside it (./timers-statements.ts for ./timers.ts, …), one name each; the names
 * are one namespace, so an area may run another's statement (a panic reads the person's live
 * timer with the timers' own). Values are always bound parameters, never interpolated.
 */
import type Database from 'better-sqlite3';
import { BATCH_SQL } from './batch-statements.js';
import { CONTACT_IDS_SQL } from './contact-ids-statements.js';
import { CONTACTS_SQL } from './contacts-statements.js';
import { DELIVERIES_SQL } from './deliveries-statements.js';
import { INCIDENTS_SQL } from './incidents-statements.js';
import { LOCATION_SQL } from './location-statements.js';
import { MODERATION_SQL } from './moderation-statements.js';
import { PERSONAL_SQL } from './personal-statements.js';
import { SAFETY_SQL } from './safety-statements.js';
import { TIMERS_SQL } from './timers-statements.js';
import { TOKENS_SQL } from './tokens-statements.js';
import { DURESS_SQL } from './duress-statements.js';
import { REPLIES_SQL } from './replies-statements.js';

/** the store's own: readiness */
const STORE_SQL = Object.freeze({ ping: 'SELECT 1 AS ok' });

const AREAS = [
  STORE_SQL,
  TIMERS_SQL,
  INCIDENTS_SQL,
  DELIVERIES_SQL,
  CONTACTS_SQL,
  CONTACT_IDS_SQL,
  BATCH_SQL,
  SAFETY_SQL,
  MODERATION_SQL,
  LOCATION_SQL,
  TOKENS_SQL,
  PERSONAL_SQL,
  DURESS_SQL,
  REPLIES_SQL,
] as const;

/** every statement's name: the keys of each area's table (distributed over the union of the tables) */
type NamesOf<Area> = Area extends unknown ? keyof Area : never;
type Names = NamesOf<(typeof AREAS)[number]>;

export type Statements = { readonly [K in Names]: Database.Statement };

export function prepareAll(db: Database.Database): Statements {
  const out: Record<string, Database.Statement> = {};
  for (const area of AREAS)
    for (const [name, sql] of Object.entries(area)) {
      // one namespace: a second statement of the same name would silently replace the first
      if (name in out) throw new Error(`two SQLite statements are named ${name}`);
      out[name] = db.prepare(sql);
    }
  return Object.freeze(out) as Statements;
}
