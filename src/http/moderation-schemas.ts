/**
 * Request validators and response shapes of the moderator actions (resend, cancel, notes,
 * audit); the OpenAPI document is generated from them like from ./validation.ts and ./schemas.ts.
 */
import { z } from 'zod';
import { AUDIT_ACTIONS, NOTE_MAX_CHARS } from '../domain/moderation.js';
import { PAGE_SIZE } from '../domain/paging.js';

const at = (description: string) => z.iso.datetime().meta({ description });

// ── requests ───────────────────────────────────────────────────────────────────

export const NoteBody = z.strictObject({
  text: z.string().min(1).max(NOTE_MAX_CHARS).meta({
    description:
      'Plain text; newlines and tabs allowed. Control, bidirectional and zero-width characters, or only whitespace, answer 400 `note_invalid`.',
  }),
});

const AUDIT_CURSOR = /^a1\.[A-Za-z0-9_-]+$/;

/** Newest first: `(at, id)` of the last line read. */
export interface AuditCursor {
  at: Date;
  id: string;
}

export function encodeAuditCursor(c: AuditCursor): string {
  return `a1.${Buffer.from(JSON.stringify([c.at.getTime(), c.id])).toString('base64url')}`;
}

function decodeAuditCursor(s: string): AuditCursor | undefined {
  try {
    const parts: unknown = JSON.parse(Buffer.from(s.slice(3), 'base64url').toString('utf8'));
    if (!Array.isArray(parts) || parts.length !== 2) return undefined;
    const [ms, id] = parts as unknown[];
    if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || typeof id !== 'string' || id.length === 0) return undefined;
    return { at: new Date(ms), id };
  } catch {
    return undefined;
  }
}

// as an id in a path (validation.ts IdParam): printable ASCII, at most 200 characters
const filterId = (description: string, example: string) =>
  z
    .string()
    .min(1)
    .max(200)
    .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
    .meta({ description, examples: [example] })
    .optional();

export const AuditQuery = z.strictObject({
  cursor: z
    .string()
    .min(4)
    .max(400)
    .regex(AUDIT_CURSOR, 'a `cursor` from an earlier audit answer')
    .meta({
      description: 'the `cursor` of the previous page (opaque): the lines older than it',
      examples: ['a1.WzE3NjQ3MjAwMDAwMDAsIm5vdGU6bm90ZV8wIl0'],
    })
    .transform((s, ctx): AuditCursor => {
      const c = decodeAuditCursor(s);
      if (c) return c;
      ctx.addIssue({ code: 'custom', message: 'must be a `cursor` from an earlier audit answer' });
      return z.NEVER;
    })
    .optional(),
  limit: z.coerce.number().int().min(1).max(PAGE_SIZE).optional(),
  actor: filterId('only the lines of this moderator (`sub`)', 'mod-ann'),
  person: filterId('only the lines about this person (user id)', 'alice'),
  incident: filterId('only the lines about this incident', 'inc_0197a1b2-0000-7000-8000-000000000001'),
});

// ── responses ──────────────────────────────────────────────────────────────────

export const Note = z.object({
  id: z.string(),
  incidentId: z.string(),
  author: z.string().meta({ description: 'the moderator (`sub`)' }),
  text: z.string().meta({ description: 'empty once retention removed it' }),
  createdAt: at('when it was written'),
  redactedAt: at('when retention removed the text').optional(),
});

export const AuditLine = z.object({
  id: z.string().meta({
    description:
      'stable per fact: `resend:<key>:<n>`, `cancel:<key>`, `note:<noteId>`, `revoke:<userId>:<stamp ms>`, `ack:<incidentId>`, ' +
      '`resolve:<incidentId>`, `retry:<timerId>:<ms>`; a read: `read:<request id>` (per incident for a read of many trails)',
  }),
  at: at('when it was done (store clock)'),
  actor: z.string().meta({ description: 'the moderator (`sub`)' }),
  action: z.enum(AUDIT_ACTIONS),
  target: z.string().meta({
    description:
      'a delivery key (resend, cancel), an incident id (note, acknowledge, resolve, `incident.read`, `trail.read`), a timer id (retry) or a person (`user.revoke_tokens`, `timers.read`)',
  }),
  incidentId: z
    .string()
    .meta({ description: 'absent for an action on a person (`user.revoke_tokens`, `timers.read` without an open incident)' })
    .optional(),
  person: z
    .string()
    .meta({
      description: 'whose data it concerns (user id); a pseudonym (`p_…`) once they erased their data; absent on lines older than it',
    })
    .optional(),
  reason: z.string().meta({ description: 'why the moderator looked (`timers.read`)' }).optional(),
});

export const AuditPage = z.object({
  audit: z.array(AuditLine),
  cursor: z.string().meta({ description: 'pass back as `cursor` for the next (older) page; absent on the last page' }).optional(),
  more: z.boolean().meta({ description: 'a full page came back: there may be older lines' }),
});
