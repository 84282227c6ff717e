/**
 * Token revocation's collection (`token_revocations`): one document per person, `_id` = the
 * user id, `notBefore` = the "tokens not before" stamp (server clock). Read by `_id` only.
 */
import { Schema, type SchemaOptions } from 'mongoose';

export interface TokenStampDoc {
  _id: string;
  notBefore: Date;
}

export function tokenStampSchema(options: SchemaOptions<TokenStampDoc>): Schema<TokenStampDoc> {
  return new Schema<TokenStampDoc>(
    { _id: { type: String, required: true }, notBefore: { type: Date, required: true } },
    { ...options, collection: 'token_revocations' },
  );
}
