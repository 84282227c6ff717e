/**
 * The duress PIN's collection (`duress_pins`): one document per person who set one, `_id` = the
 * user id; the scrypt hash, its salt and cost. Read by `_id` only.
 */
import { Schema, type SchemaOptions } from 'mongoose';

export interface DuressPinDoc {
  _id: string;
  salt: string;
  hash: string;
  cost: number;
  updatedAt: Date;
}

export function duressPinSchema(options: SchemaOptions<DuressPinDoc>): Schema<DuressPinDoc> {
  return new Schema<DuressPinDoc>(
    {
      _id: { type: String, required: true },
      salt: { type: String, required: true },
      hash: { type: String, required: true },
      cost: { type: Number, required: true },
      updatedAt: { type: Date, required: true },
    },
    { ...options, collection: 'duress_pins' },
  );
}
