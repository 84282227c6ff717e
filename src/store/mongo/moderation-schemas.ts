/** Collections of moderator notes and the audit (MongoDB store); created with the others at start-up. */
import { Schema, type Connection, type Model } from 'mongoose';
import { AUDIT_ACTIONS, type AuditEntry, type IncidentNote } from '../../domain/moderation.js';

export type AuditDoc = Omit<AuditEntry, 'id'> & { _id: string };
export type NoteDoc = Omit<IncidentNote, 'id'> & { _id: string };

export interface ModerationModels {
  audit: Model<AuditDoc>;
  notes: Model<NoteDoc>;
}

const OPTIONS = { versionKey: false, timestamps: false, bufferCommands: false, autoIndex: false, autoCreate: false, strict: true } as const;

function auditSchema(): Schema<AuditDoc> {
  const s = new Schema<AuditDoc>(
    {
      _id: { type: String, required: true },
      at: { type: Date, required: true },
      actor: { type: String, required: true },
      action: { type: String, enum: AUDIT_ACTIONS, required: true },
      target: { type: String, required: true },
      // none for an action on a person (`user.revoke_tokens`, `timers.read`)
      incidentId: { type: String, required: false },
      // whose data it concerns; a pseudonym once they erased their data
      person: { type: String, required: false },
      // why the moderator looked (a read of a person's timers without an open incident)
      reason: { type: String, required: false },
    },
    { ...OPTIONS, collection: 'audit' },
  );
  // newest first, keyset on (at, _id)
  s.index({ at: -1, _id: -1 }, { name: 'newest' });
  // the lines about one delivery: a contact id re-key moves them with it (./contact-ids.ts)
  s.index({ target: 1 }, { name: 'target' });
  // one actor's, one person's, one incident's lines, newest first
  s.index({ actor: 1, at: -1, _id: -1 }, { name: 'by_actor' });
  s.index({ person: 1, at: -1, _id: -1 }, { name: 'by_person' });
  s.index({ incidentId: 1, at: -1, _id: -1 }, { name: 'by_incident' });
  return s;
}

function noteSchema(): Schema<NoteDoc> {
  const s = new Schema<NoteDoc>(
    {
      _id: { type: String, required: true },
      incidentId: { type: String, required: true },
      author: { type: String, required: true },
      text: { type: String },
      createdAt: { type: Date, required: true },
      redactedAt: Date,
    },
    { ...OPTIONS, collection: 'incident_notes' },
  );
  s.index({ incidentId: 1, createdAt: 1 }, { name: 'of_incident' });
  return s;
}

export function makeModerationModels(conn: Connection): ModerationModels {
  return { audit: conn.model<AuditDoc>('Audit', auditSchema()), notes: conn.model<NoteDoc>('IncidentNote', noteSchema()) };
}
