/** The record of what the stored contact ids were derived with (MongoDB store; ./contact-ids.ts re-keys them). */
import { Schema, type Connection, type Model } from 'mongoose';

/** One old id and the id that replaces it. */
export interface RekeyPair {
  from: string;
  to: string;
}

/** The one document (`_id: 'contactIds'`). Absent: the ids are the legacy hash (every id before keyed ids). */
export interface KeyingDoc {
  _id: string;
  /** what the ids are derived with: `sha256` or a key's fingerprint (while `target` is set: the people after `cursor`) */
  scheme: string;
  /** a re-key to this key's fingerprint is under way */
  target?: string;
  /** the people up to this id (in id order) are re-keyed */
  cursor?: string;
  /** the person being re-keyed and their map, recorded before any of their rows moves */
  journal?: { userId: string; pairs: RekeyPair[] };
  /** the process re-keying, until `leaseUntil`: one at a time */
  owner?: string;
  leaseUntil?: Date;
}

const OPTIONS = { versionKey: false, timestamps: false, bufferCommands: false, autoIndex: false, autoCreate: false, strict: true } as const;

function keyingSchema(): Schema<KeyingDoc> {
  const pair = new Schema<RekeyPair>({ from: { type: String, required: true }, to: { type: String, required: true } }, { _id: false });
  return new Schema<KeyingDoc>(
    {
      _id: { type: String, required: true },
      scheme: { type: String, required: true },
      target: String,
      cursor: String,
      journal: { type: new Schema({ userId: { type: String, required: true }, pairs: [pair] }, { _id: false }), default: undefined },
      owner: String,
      leaseUntil: Date,
    },
    { ...OPTIONS, collection: 'contact_id_keying' },
  );
}

export function makeKeyingModel(conn: Connection): Model<KeyingDoc> {
  return conn.model<KeyingDoc>('ContactIdKeying', keyingSchema());
}
