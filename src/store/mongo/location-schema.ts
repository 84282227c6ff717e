/**
 * The location trail's collection (`location_fixes`): one document per (timer, fix time),
 * `_id` = `<timerId>:<fix time ms>`, so a repeated flush upserts nothing new. `storedAt`
 * is when it was written; retention deletes by it (or by `timerId`).
 */
import { Schema, type SchemaOptions } from 'mongoose';

export interface FixDoc {
  _id: string;
  timerId: string;
  userId: string;
  at: Date;
  lat: number;
  lng: number;
  accuracyM?: number;
  storedAt: Date;
}

export function fixSchema(options: SchemaOptions<FixDoc>): Schema<FixDoc> {
  const s = new Schema<FixDoc>(
    {
      _id: { type: String, required: true },
      timerId: { type: String, required: true },
      userId: { type: String, required: true },
      at: { type: Date, required: true },
      lat: { type: Number, required: true },
      lng: { type: Number, required: true },
      accuracyM: Number,
      storedAt: { type: Date, required: true },
    },
    { ...options, collection: 'location_fixes' },
  );
  // a timer's trail, newest first
  s.index({ timerId: 1, at: -1 }, { name: 'timer_at' });
  // retention: everything stored before a cut-off
  s.index({ storedAt: 1 }, { name: 'stored' });
  return s;
}
