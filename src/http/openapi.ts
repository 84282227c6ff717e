/**
 * OpenAPI 3.1 description of every HTTP route, served at /openapi.json.
 * Schemas are generated from zod: request bodies, query, path and header parameters from the
 * validators in ./validation.ts, response shapes from ./schemas.ts, duration bounds from the
 * TimerLimits the service enforces. Kept honest by test/integration/openapi.test.ts: every
 * route Express registers is described here, every described path + method answers, and the
 * documented bounds are the ones the running service accepts and refuses.
 */
import { z } from 'zod';
import type { TimerLimits } from '../domain/limits.js';
import { AuditLine, AuditPage, AuditQuery, Note, NoteBody } from './moderation-schemas.js';
import {
  Contact,
  ContactList,
  Delivery,
  ErrorBody,
  FailedEscalation,
  FailedEscalationList,
  Fix,
  FixAnswer,
  GeoPoint,
  Incident,
  IncidentList,
  IncidentWithDeliveries,
  Readiness,
  Revocation,
  PersonalExport,
  Erasure,
  DuressState,
  Timer,
  TimerList,
  Trail,
  TrailList,
  TwilioStatusCallback,
  TwilioIncomingMessage,
  Notification,
  NotificationList,
} from './schemas.js';
import {
  ArmBody,
  CommandIdempotencyKey,
  ContactsBody,
  EmptyBody,
  DuressBody,
  CheckInBody,
  ExtendBody,
  FixBody,
  IdempotencyKey,
  IdParam,
  IncidentQuery,
  NotificationQuery,
  SosBody,
  SosIdempotencyKey,
  TimerQuery,
  AdminTimerQuery,
  TrailsQuery,
} from './validation.js';

type Json = Record<string, unknown>;
export type Operation = Json & { operationId: string; responses: Record<string, Json> };
export type PathItem = Partial<Record<'get' | 'put' | 'post' | 'delete' | 'patch', Operation>> & { parameters?: Json[] };

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: Json;
  servers: Json[];
  tags: Json[];
  security: Record<string, string[]>[];
  paths: Record<string, PathItem>;
  components: {
    schemas: Record<string, Json>;
    responses: Record<string, Json>;
    parameters: Record<string, Json>;
    headers: Record<string, Json>;
    securitySchemes: Record<string, Json>;
  };
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

type JsonSchema = z.core.JSONSchema.JSONSchema;

/**
 * Noise off: `z.int()` says ±MAX_SAFE_INTEGER, which only restates what a JSON integer is, and
 * `format: date-time` already says what zod's long ISO regex says.
 */
const lessNoise = ({ jsonSchema }: { jsonSchema: JsonSchema }) => {
  if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
  if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
  if (jsonSchema.format === 'date-time') delete jsonSchema.pattern;
};
const generate = { io: 'input', unrepresentable: 'throw', override: lessNoise } as const;

/** A Schema Object: the generated JSON Schema without the document-level `$schema` / `$id`. */
function schemaObject(js: JsonSchema): Json {
  const { $schema: _s, $id: _i, ...rest } = js;
  return rest;
}
const jsonSchema = (schema: z.ZodType): Json => schemaObject(z.toJSONSchema(schema, generate));

/** A Parameter Object; the schema's description goes on the parameter. */
function parameter(name: string, where: 'query' | 'path' | 'header', required: boolean, js: JsonSchema): Json {
  const { description, ...schema } = js;
  return { name, in: where, required, ...(typeof description === 'string' ? { description } : {}), schema: schemaObject(schema) };
}

/** One query parameter per field of a strict query validator. */
function queryParameters(query: z.ZodObject): Json[] {
  const js = z.toJSONSchema(query, generate);
  const required = js.required ?? [];
  return Object.entries(js.properties ?? {}).map(([name, s]) => {
    if (typeof s === 'boolean') throw new Error(`query field ${name} has no schema`);
    return parameter(name, 'query', required.includes(name), s);
  });
}

/** Durations are checked against the configured limits by the domain (400 `out_of_range`). */
const duration = (limits: TimerLimits) =>
  z
    .int()
    .min(limits.minSeconds)
    .max(limits.maxSeconds)
    .meta({ description: 'between TIMER_MIN_SECONDS and TIMER_MAX_SECONDS; outside answers 400 `out_of_range`' });

const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers', name: string) => ({ $ref: `#/components/${kind}/${name}` });
const json = (schema: Json) => ({ 'application/json': { schema } });
const ok = (description: string, schema: Json, headers?: Json) => ({ description, content: json(schema), ...(headers ? { headers } : {}) });
const obj = (properties: Json, required: string[] = Object.keys(properties)) => ({ type: 'object', properties, required });
const dateTime = (description: string) => ({ type: 'string', format: 'date-time', description });
const requestId = { 'X-Request-Id': ref('headers', 'XRequestId') };
const checkInBody = {
  required: false,
  description: 'Empty, or `{ pin }`: the duress PIN opens a silent SOS and answers as a genuine request; any other PIN is ignored.',
  content: json(ref('schemas', 'CheckInInput')),
};
const noBody = {
  required: false,
  description: 'Empty, or an empty JSON object. Unknown fields are refused.',
  content: json(jsonSchema(EmptyBody)),
};
const errors = (...names: string[]) => Object.fromEntries(names.map((n) => [n, ref('responses', ERROR_RESPONSES[n] ?? 'Internal')]));
const ERROR_RESPONSES: Record<string, string> = {
  '400': 'BadRequest',
  '401': 'Unauthorized',
  '403': 'Forbidden',
  '404': 'NotFound',
  '409': 'Conflict',
  '413': 'PayloadTooLarge',
  '415': 'UnsupportedEncoding',
  '422': 'IdempotencyMismatch',
  '429': 'RateLimited',
  '500': 'Internal',
};
const userErrors = ['400', '401', '413', '415', '429', '500'];
/** no bearer token: health, metrics, this document, the console page */
const public_: { security: Record<string, string[]>[] } = { security: [] };

const timerOne = ok('The timer', obj({ timer: ref('schemas', 'Timer') }), requestId);
/** A command's answer: with `Idempotent-Replayed: true` when its Idempotency-Key had already applied it. */
const timerCommandAnswer = (description: string, schema: Json) =>
  ok(description, schema, {
    ...requestId,
    'Idempotent-Replayed': {
      schema: { type: 'string', const: 'true' },
      description: 'this Idempotency-Key had already applied the command; the timer as it is now',
    },
  });
const REPEATS =
  ' With `Idempotency-Key`, a retry of a request that applied changes nothing and answers the timer as it is now ' +
  '(`Idempotent-Replayed: true`); the key used for another request (body, command or timer) answers 422.';
const timerCommand = (
  id: string,
  summary: string,
  description: string,
  rest: { responses: Record<string, Json>; requestBody?: Json },
  keyed = false,
): Operation => ({
  tags: ['timers'],
  operationId: id,
  summary,
  description: keyed ? description + REPEATS : description,
  parameters: keyed ? [ref('parameters', 'TimerId'), ref('parameters', 'CommandIdempotencyKey')] : [ref('parameters', 'TimerId')],
  ...rest,
});

const incidentCommand = (id: string, summary: string, description: string): Operation => ({
  tags: ['admin'],
  operationId: id,
  summary,
  description,
  parameters: [ref('parameters', 'IncidentId')],
  requestBody: noBody,
  responses: {
    '200': ok('The incident after the command', obj({ incident: ref('schemas', 'IncidentWithDeliveries') }), requestId),
    ...errors(...userErrors, '403', '404', '409'),
  },
});

/** Body and answers of posting a live location fix (for a timer, or an incident). */
const postFix = () => ({
  requestBody: { required: true, content: json(ref('schemas', 'FixInput')) },
  responses: {
    '200': ok('Kept or dropped', ref('schemas', 'FixAnswer'), requestId),
    ...errors(...userErrors, '404', '409', '429'),
  },
});

/** The panic button and the inbox. */
function safetyPaths(): Record<string, PathItem> {
  const replayed = { 'Idempotent-Replayed': { schema: { type: 'string', const: 'true' } } };
  const sosAnswer = (description: string, headers: Json = {}) =>
    ok(description, obj({ incident: ref('schemas', 'Incident'), attached: { type: 'boolean' } }), { ...requestId, ...headers });
  return {
    '/v1/sos': {
      post: {
        tags: ['sos'],
        operationId: 'raiseSos',
        summary: 'Panic button: raise an SOS now',
        description:
          'Opens an incident at once (`source: "panic"`) and texts the emergency contacts, as a timer SOS does. If the caller ' +
          'already has an open incident, the press attaches to it (200, `attached: true`, `panic` added to its `sources`, no second ' +
          'texts). A live timer of the caller ends with the press (expired, linked to the incident) so it can never raise a second SOS. ' +
          'With `Idempotency-Key`, a repeat answers the same incident (200, `Idempotent-Replayed: true`); the key with another body answers 422.',
        parameters: [ref('parameters', 'SosIdempotencyKey')],
        requestBody: { required: false, content: json(ref('schemas', 'SosInput')) },
        responses: {
          '201': sosAnswer('Raised: a new incident'),
          '200': sosAnswer('Attached to the open incident, or replayed', replayed),
          ...errors(...userErrors, '409', '422'),
        },
      },
    },
    '/v1/incidents/{id}/safe': {
      post: {
        tags: ['sos'],
        operationId: 'ownIncidentSafe',
        summary: "I'm safe on one of the caller's own incidents",
        description:
          'Ends the SOS as a false alarm, as "I\'m safe" on its timer does: each contact whose SOS went out (or may have) gets one ' +
          'all-clear, after that SOS; SOS texts that have not gone out are superseded. The way to end an accidental panic. After a ' +
          "moderator's resolve that texted nobody, the contacts who were texted still hear the person is safe. Idempotent; " +
          "someone else's incident answers 404.",
        parameters: [ref('parameters', 'IncidentId')],
        requestBody: noBody,
        responses: {
          '200': ok('The incident after the command', obj({ incident: ref('schemas', 'Incident') }), requestId),
          ...errors(...userErrors, '404'),
        },
      },
    },
    '/v1/incidents/{id}/location': {
      post: {
        tags: ['sos'],
        operationId: 'postIncidentLocation',
        summary: "Post a live location fix for one of the caller's own open incidents",
        description:
          "For a panic raised without a timer (its trail is the incident's own), or any open SOS of the caller: stored at once and " +
          'pushed to moderators (`location.updated` with `incidentId`); the same drops, follow-up and rate limits as ' +
          '`POST /v1/timers/{id}/location`. 409 `incident_wrong_state` once the incident is closed.',
        parameters: [ref('parameters', 'IncidentId')],
        ...postFix(),
      },
    },
    '/v1/me/notifications': {
      get: {
        tags: ['notifications'],
        operationId: 'listNotifications',
        summary: "The caller's inbox, newest first",
        description: 'What happened while the app was away: warnings, contacts texted, a moderator acknowledged. Paged with `cursor`.',
        parameters: queryParameters(NotificationQuery),
        responses: { '200': ok('Notifications', ref('schemas', 'NotificationList'), requestId), ...errors(...userErrors) },
      },
    },
    '/v1/me/notifications/read-all': {
      post: {
        tags: ['notifications'],
        operationId: 'readAllNotifications',
        summary: 'Mark every unread notification as read',
        requestBody: noBody,
        responses: {
          '200': ok('How many changed', obj({ read: { type: 'integer', minimum: 0 } }), requestId),
          ...errors(...userErrors),
        },
      },
    },
    '/v1/me/notifications/{id}/read': {
      post: {
        tags: ['notifications'],
        operationId: 'readNotification',
        summary: 'Mark one notification as read (idempotent)',
        parameters: [ref('parameters', 'NotificationId')],
        requestBody: noBody,
        responses: {
          '200': ok('The notification', obj({ notification: ref('schemas', 'Notification') }), requestId),
          ...errors(...userErrors, '404'),
        },
      },
    },
  };
}

function paths(): Record<string, PathItem> {
  return {
    ...safetyPaths(),
    '/v1/timers': {
      post: {
        tags: ['timers'],
        operationId: 'armTimer',
        summary: 'Arm a timer',
        description:
          'Starts a safety timer for the caller. One live timer per person. With `Idempotency-Key`, repeating the same request ' +
          'returns the same timer (200, `Idempotent-Replayed: true`); the same key with a different body is refused (422).',
        parameters: [ref('parameters', 'IdempotencyKey')],
        requestBody: { required: true, content: json(ref('schemas', 'ArmTimer')) },
        responses: {
          '201': ok('Armed', obj({ timer: ref('schemas', 'Timer') }), {
            ...requestId,
            Location: { schema: { type: 'string' }, description: '/v1/timers/{id}' },
          }),
          '200': ok('Replayed: this Idempotency-Key already armed this timer', obj({ timer: ref('schemas', 'Timer') }), {
            ...requestId,
            'Idempotent-Replayed': { schema: { type: 'string', const: 'true' } },
          }),
          ...errors(...userErrors, '409', '422'),
        },
      },
      get: {
        tags: ['timers'],
        operationId: 'listTimers',
        summary: "The caller's timers",
        description:
          'Pass the returned `cursor` back as `since` to catch up after a reconnect (may repeat, never misses). ' +
          'With `since`, changes come oldest first, ordered by `(updatedAt, id)`; read again while `more` is true.',
        parameters: queryParameters(TimerQuery),
        responses: { '200': ok('Timers', ref('schemas', 'TimerList'), requestId), ...errors(...userErrors) },
      },
    },
    '/v1/timers/{id}': {
      get: timerCommand('getTimer', 'One of the caller’s timers', 'Another person’s timer answers 404, not 403.', {
        responses: { '200': timerOne, ...errors(...userErrors, '404') },
      }),
    },
    '/v1/timers/{id}/extend': {
      post: timerCommand(
        'extendTimer',
        'Extend a live timer',
        'Adds `seconds` to the deadline, before it passes. Bounded per extension, in count and in total span.',
        {
          requestBody: { required: true, content: json(ref('schemas', 'ExtendTimer')) },
          responses: {
            '200': timerCommandAnswer('The timer', obj({ timer: ref('schemas', 'Timer') })),
            ...errors(...userErrors, '404', '409', '422'),
          },
        },
        true,
      ),
    },
    '/v1/timers/{id}/safe': {
      post: timerCommand(
        'checkIn',
        "I'm safe",
        'Resolves the timer as safe. Idempotent. After the SOS went out, the timer stays `expired`, the incident becomes a ' +
          '`false_alarm` and the contacts are told the person is safe; the answer then carries the incident.',
        {
          requestBody: checkInBody,
          responses: {
            '200': timerCommandAnswer(
              'The timer (and the incident when the SOS had gone out)',
              obj({ timer: ref('schemas', 'Timer'), incident: ref('schemas', 'Incident') }, ['timer']),
            ),
            ...errors(...userErrors, '404', '409', '422'),
          },
        },
        true,
      ),
    },
    '/v1/timers/{id}/cancel': {
      post: timerCommand(
        'cancelTimer',
        'Cancel a live timer',
        'Idempotent; an expired timer cannot be cancelled (409).',
        {
          requestBody: checkInBody,
          responses: {
            '200': timerCommandAnswer('The timer', obj({ timer: ref('schemas', 'Timer') })),
            ...errors(...userErrors, '404', '409', '422'),
          },
        },
        true,
      ),
    },
    '/v1/timers/{id}/location': {
      post: timerCommand(
        'postLocation',
        'Post a live location fix',
        'While the timer runs, or while its SOS incident is open. A fix under 10 m from the last kept one (or older than it) is ' +
          'dropped (`kept: false`). Before an SOS only the person sees fixes; once the incident is open each kept fix goes to ' +
          'moderators (`location.updated`) and, beyond LOCATION_FOLLOWUP_METERS from where the SOS said, the contacts get one ' +
          '`moved` text. Rate-limited per person (LOCATION_MIN_INTERVAL_SECONDS between kept fixes, LOCATION_MAX_PER_MINUTE ' +
          'posts): 429 `rate_limited` with Retry-After. Also as the `location.fix` socket message.',
        postFix(),
      ),
    },
    '/v1/timers/{id}/locations': {
      get: timerCommand('getOwnTrail', 'The trail of one of the caller’s timers', 'Kept fixes, oldest first.', {
        responses: { '200': ok('The trail', ref('schemas', 'Trail'), requestId), ...errors(...userErrors, '404') },
      }),
    },
    '/v1/me/contacts': {
      get: {
        tags: ['contacts'],
        operationId: 'getContacts',
        summary: "The caller's emergency contacts",
        responses: {
          '200': ok('Contacts', ref('schemas', 'ContactList'), requestId),
          ...errors(...userErrors),
        },
      },
      put: {
        tags: ['contacts'],
        operationId: 'replaceContacts',
        summary: 'Replace the emergency contacts as a whole',
        requestBody: { required: true, content: json(ref('schemas', 'ContactsInput')) },
        responses: {
          '200': ok('Saved contacts', ref('schemas', 'ContactList'), requestId),
          ...errors(...userErrors),
        },
      },
    },
    '/v1/me/tokens/revoke': {
      post: {
        tags: ['tokens'],
        operationId: 'revokeOwnTokens',
        summary: 'Revoke every token of the caller issued until now (a lost phone)',
        description:
          'Moves the caller\'s "tokens not before" stamp to now: every token of theirs issued at or before it, the one of this ' +
          'request included, answers 401 `token_revoked` from now on (on other replicas within TOKEN_REVOCATION_CACHE_MS) and ' +
          'their sockets are cut off at once. A token issued in the same second is refused too: ask the issuer for a new one a ' +
          'second later.',
        requestBody: noBody,
        responses: { '200': ok('Revoked', ref('schemas', 'Revocation'), requestId), ...errors(...userErrors) },
      },
    },
    '/v1/me/export': {
      get: {
        tags: ['personal data'],
        operationId: 'exportOwnData',
        summary: 'Everything Vigil holds about the caller, as JSON',
        description:
          'Timers, their stored location fixes, contacts, inbox, incidents about them (as their own view: no moderator ids) and ' +
          'how many Idempotency-Keys are kept for them. What each kind of record is and how long it lives: docs/privacy.md.',
        responses: { '200': ok('The export', ref('schemas', 'PersonalExport'), requestId), ...errors(...userErrors) },
      },
    },
    '/v1/me': {
      delete: {
        tags: ['personal data'],
        operationId: 'eraseOwnData',
        summary: "Erase the caller's data",
        description:
          'Deletes their timers, location fixes, contacts, inbox and Idempotency-Keys at once. Their incidents, the texts of ' +
          "those and the audit lines about them stay for the moderators' review (retention anonymises them on its schedule), " +
          'naming only a pseudonym (`p_…`, a keyed hash of the user id). While an SOS of theirs is open (409 `incident_open`) or ' +
          'a timer runs (409 `timer_live`) nothing is erased: ask again once it is over. Repeating it is harmless.',
        requestBody: noBody,
        responses: { '200': ok('Erased', ref('schemas', 'Erasure'), requestId), ...errors(...userErrors, '409') },
      },
    },
    '/v1/me/duress': {
      put: {
        tags: ['duress'],
        operationId: 'setDuressPin',
        summary: 'Set (or replace) the caller’s duress PIN',
        description:
          'Kept as a slow hash only (scrypt, a salt per person), never readable back. "I\'m safe" or cancel sent with this PIN ' +
          'answers exactly as a genuine one does and opens a silent SOS: moderators are paged, the contacts texted ' +
          '(DURESS_TEXT_CONTACTS), and nothing the phone reads shows it (docs/security.md, "Duress code").',
        requestBody: { required: true, content: json(ref('schemas', 'DuressInput')) },
        responses: { '200': ok('Set', ref('schemas', 'DuressState'), requestId), ...errors(...userErrors) },
      },
      delete: {
        tags: ['duress'],
        operationId: 'removeDuressPin',
        summary: 'Remove the caller’s duress PIN (idempotent)',
        requestBody: noBody,
        responses: { '200': ok('Removed', ref('schemas', 'DuressState'), requestId), ...errors(...userErrors) },
      },
    },
    '/v1/admin/incidents': {
      get: {
        tags: ['admin'],
        operationId: 'listIncidents',
        summary: 'Incidents with their deliveries (moderators)',
        parameters: queryParameters(IncidentQuery),
        responses: {
          '200': ok('Incidents', ref('schemas', 'IncidentList'), requestId),
          ...errors(...userErrors, '403'),
        },
      },
    },
    '/v1/admin/incidents/{id}': {
      get: {
        tags: ['admin'],
        operationId: 'getIncident',
        summary: 'One incident with its deliveries (moderators)',
        description: 'Audited: one `incident.read` line per request (the card carries the contacts and their texts).',
        parameters: [ref('parameters', 'IncidentId')],
        responses: {
          '200': ok('The incident', obj({ incident: ref('schemas', 'IncidentWithDeliveries') }), requestId),
          ...errors(...userErrors, '403', '404'),
        },
      },
    },
    '/v1/admin/incidents/locations': {
      get: {
        tags: ['admin'],
        operationId: 'getIncidentTrails',
        summary: 'The location trails of several incidents in one request (moderators)',
        description:
          'Each as `GET /v1/admin/incidents/{id}/locations` answers it (empty once the incident is closed); an id with no incident is left out. For a board of open incidents: one request, one charge to the budget, instead of one per card. Audited: one `trail.read` line per incident read, written together.',
        parameters: queryParameters(TrailsQuery),
        responses: {
          '200': ok('The trails', ref('schemas', 'TrailList'), requestId),
          ...errors(...userErrors, '403'),
        },
      },
    },
    '/v1/admin/incidents/{id}/locations': {
      get: {
        tags: ['admin'],
        operationId: 'getIncidentTrail',
        summary: 'The location trail of an open incident (moderators)',
        description:
          'Kept fixes of the incident’s timer, oldest first; empty once the incident is closed. Audited: one `trail.read` line per request.',
        parameters: [ref('parameters', 'IncidentId')],
        responses: {
          '200': ok('The trail', ref('schemas', 'Trail'), requestId),
          ...errors(...userErrors, '403', '404'),
        },
      },
    },
    '/v1/admin/incidents/{id}/ack': {
      post: incidentCommand(
        'acknowledgeIncident',
        'Acknowledge an active incident',
        'Idempotent; a resolved incident cannot be acknowledged (409). Audited (`incident.acknowledge`) in the same write.',
      ),
    },
    '/v1/admin/incidents/{id}/resolve': {
      post: incidentCommand(
        'resolveIncident',
        'Resolve an open incident',
        'Idempotent; a false alarm stays a false alarm (409). Audited (`incident.resolve`) in the same write.',
      ),
    },
    '/v1/admin/escalations/failed': {
      get: {
        tags: ['admin'],
        operationId: 'listFailedEscalations',
        summary: 'Expired timers whose SOS escalation failed ESCALATION_MAX_ATTEMPTS times (dead letters, moderators)',
        description:
          'These are no longer retried: no incident may exist and no contact may have been texted. Oldest deadline first, at most 100.',
        responses: {
          '200': ok('Dead-lettered escalations', ref('schemas', 'FailedEscalationList'), requestId),
          ...errors(...userErrors, '403'),
        },
      },
    },
    '/v1/admin/escalations/{timerId}/retry': {
      post: {
        tags: ['admin'],
        operationId: 'retryFailedEscalation',
        summary: 'Send a dead-lettered escalation back to the sweep (moderators)',
        description:
          'The escalation becomes `pending` with its failure count reset; the next sweep retries it. Idempotent: any other escalation state answers with the current timer. Audited (`escalation.retry`) in the same write.',
        parameters: [parameter('timerId', 'path', true, z.toJSONSchema(IdParam, generate))],
        requestBody: noBody,
        responses: {
          '200': ok('The timer', obj({ timer: ref('schemas', 'FailedEscalation') }), requestId),
          ...errors(...userErrors, '403', '404'),
        },
      },
    },
    '/v1/admin/users/{userId}/timers': {
      get: {
        tags: ['admin'],
        operationId: 'listUserTimers',
        summary: "A person's timers (moderators; support: is her timer still running?)",
        description:
          'Audited: one `timers.read` line per request, with the stated `reason`. While the person has no open incident (before ' +
          'any SOS) a `reason` is required: 400 `reason_required` without one.',
        parameters: [parameter('userId', 'path', true, z.toJSONSchema(IdParam, generate)), ...queryParameters(AdminTimerQuery)],
        responses: {
          '200': ok(
            'Timers',
            { allOf: [ref('schemas', 'TimerList'), obj({ serverTime: dateTime('the store clock, to show time left') })] },
            requestId,
          ),
          ...errors(...userErrors, '403'),
        },
      },
    },
    '/v1/admin/users/{userId}/revoke-tokens': {
      post: {
        tags: ['admin'],
        operationId: 'revokeUserTokens',
        summary: 'Revoke every token of a person issued until now (moderators)',
        description:
          'Moves the person\'s "tokens not before" stamp to now (store clock): every token of theirs issued at or before it ' +
          '(by `iat`, whole seconds) answers 401 `token_revoked`, on this replica at once and on the others within ' +
          'TOKEN_REVOCATION_CACHE_MS; their sockets are cut off at once on every replica. Audited (`user.revoke_tokens`). A ' +
          'moderator revoking their own tokens signs in again.',
        parameters: [parameter('userId', 'path', true, z.toJSONSchema(IdParam, generate))],
        requestBody: noBody,
        responses: { '200': ok('Revoked', ref('schemas', 'Revocation'), requestId), ...errors(...userErrors, '403') },
      },
    },
    '/v1/admin/deliveries/{key}/resend': {
      post: {
        tags: ['admin'],
        operationId: 'resendDelivery',
        summary: 'Send a dead or failed text again (moderators)',
        description:
          'The delivery goes back to `pending`, due now, with its attempts reset, and the dispatcher sends it again; audited ' +
          '(`delivery.resend`) in the same write and pushed as `delivery.updated`. A delivery already `pending` or `sending` is on ' +
          'its way: answered as it is, no second audit line. 409: `delivery_not_resendable` (sent, delivered, superseded or ' +
          'cancelled), `incident_false_alarm` (an SOS after the person checked in), `sos_not_sent` (an all-clear whose SOS never ' +
          'reached the contact), `delivery_redacted` (anonymised by retention).',
        parameters: [parameter('key', 'path', true, z.toJSONSchema(IdParam, generate))],
        requestBody: noBody,
        responses: {
          '200': ok('The delivery', obj({ delivery: ref('schemas', 'Delivery') }), requestId),
          ...errors(...userErrors, '403', '404', '409'),
        },
      },
    },
    '/v1/admin/incidents/{id}/deliveries/cancel': {
      post: {
        tags: ['admin'],
        operationId: 'cancelPendingDeliveries',
        summary: "Cancel an incident's pending texts (moderators)",
        description:
          'Every `pending` delivery of the incident becomes `superseded` with `lastError: "cancelled_by_moderator"` and is never ' +
          'sent; one being sent right now (`sending`) is not cancelled. One audit line (`delivery.cancel`) per delivery, in the ' +
          'same write; each pushed as `delivery.updated`. A repeat cancels nothing more (`cancelled` empty).',
        parameters: [ref('parameters', 'IncidentId')],
        requestBody: noBody,
        responses: {
          '200': ok(
            'The incident after the command, and the keys cancelled by this request',
            obj({ incident: ref('schemas', 'IncidentWithDeliveries'), cancelled: { type: 'array', items: { type: 'string' } } }),
            requestId,
          ),
          ...errors(...userErrors, '403', '404'),
        },
      },
    },
    '/v1/admin/incidents/{id}/notes': {
      post: {
        tags: ['admin'],
        operationId: 'addIncidentNote',
        summary: 'Add a note to an incident (moderators)',
        description:
          'Audited (`incident.note`) with the note; pushed as `incident.updated` with the note to moderators only (the person does ' +
          'not see notes). With `Idempotency-Key`, a retry answers the same note (200, `Idempotent-Replayed: true`); the key used ' +
          'for another text answers 422. An incident anonymised by retention takes no notes (409 `incident_redacted`).',
        parameters: [ref('parameters', 'IncidentId'), ref('parameters', 'IdempotencyKey')],
        requestBody: { required: true, content: json(ref('schemas', 'NoteInput')) },
        responses: {
          '201': ok('Added', obj({ note: ref('schemas', 'Note') }), requestId),
          '200': ok('Replayed: this Idempotency-Key already added this note', obj({ note: ref('schemas', 'Note') }), {
            ...requestId,
            'Idempotent-Replayed': { schema: { type: 'string', const: 'true' } },
          }),
          ...errors(...userErrors, '403', '404', '409', '422'),
        },
      },
    },
    '/v1/admin/audit': {
      get: {
        tags: ['admin'],
        operationId: 'listAudit',
        summary: "What moderators did and read: actions on incidents and texts, token revocations, reads of a person's data (moderators)",
        description:
          'Newest first, 50 per page unless `limit` says otherwise; pass `cursor` back for the next (older) page with the same ' +
          'filters. `actor`, `person` and `incident` keep only the lines that match every one given.',
        parameters: queryParameters(AuditQuery),
        responses: { '200': ok('Audit lines', ref('schemas', 'AuditPage'), requestId), ...errors(...userErrors, '403') },
      },
    },
    '/v1/receipts/twilio': {
      post: {
        tags: ['carriers'],
        operationId: 'twilioStatusCallback',
        summary: 'Twilio delivery receipt (status callback)',
        description:
          'Called by Twilio, not by clients. Authenticated by `X-Twilio-Signature` over the configured public URL and the form ' +
          'fields. Moves a delivery forward only (a late `sent` never overwrites `delivered`), and only while the message is the ' +
          "delivery's current one (not one sent before a resend); duplicates are ignored.",
        ...twilioWebhook('TwilioStatusCallback'),
        responses: {
          '200': ok(
            'Accepted: `applied` moved the delivery forward; `kept`: no delivery has recorded that message (yet), the receipt is ' +
              'applied when an attempt records it; `stale` (duplicate, out of order) and `ignored` (an intermediate status) changed nothing',
            obj({ result: { type: 'string', enum: ['applied', 'kept', 'stale', 'ignored'] } }),
          ),
          '400': errorResponse('`invalid_receipt`: MessageSid or MessageStatus missing'),
          ...twilioWebhookErrors(),
        },
      },
    },
    '/v1/replies/twilio': {
      post: {
        tags: ['carriers'],
        operationId: 'twilioIncomingMessage',
        summary: 'A reply from a contact (Twilio incoming-message webhook)',
        description:
          'Called by Twilio, not by clients, for each text sent to our number; signed like the receipts (`X-Twilio-Signature` ' +
          'over TWILIO_INBOUND_URL and the form fields). YES/OK/1 acknowledges the open incident of each person who saved the ' +
          'number (once per contact), or confirms the contact when none is open; STOP & co. opt the contact out; START/UNSTOP ' +
          'make them confirmed again if they had confirmed, else pending; HELP answers help (docs/sms.md, "Replies from contacts"). A well-signed request is always ' +
          'answered 200 TwiML with a fixed text or an empty `<Response/>`; nothing of the reply is repeated.',
        ...twilioWebhook('TwilioIncomingMessage'),
        responses: {
          '200': {
            description: 'TwiML: one `<Message>` with a fixed answer, or an empty `<Response/>`',
            content: { 'text/xml': { schema: { type: 'string' } } },
          },
          '400': errorResponse('a body that cannot be read (a corrupt Content-Encoding)'),
          ...twilioWebhookErrors(),
        },
      },
    },
    '/console': {
      get: {
        tags: ['ops'],
        operationId: 'moderatorConsole',
        summary: 'Moderator console (HTML page)',
        description: 'A live SOS board over Socket.IO. The page asks for a moderator token; the page itself is public.',
        ...public_,
        responses: {
          '200': { description: 'The page (at `/console/`)', content: { 'text/html': { schema: { type: 'string' } } } },
          '301': {
            description: '`/console` redirects to `/console/` so relative asset URLs resolve',
            headers: { Location: { schema: { type: 'string' } } },
          },
          '503': {
            description: 'The console assets are not built (`npm run build`)',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
        },
      },
    },
    '/console/socket.io.min.js': {
      get: {
        tags: ['ops'],
        operationId: 'consoleSocketIoClient',
        summary: 'The Socket.IO browser client used by the console page',
        description:
          'Served from the installed `socket.io` package: the console loads nothing from a CDN. The console’s other static assets are files under `/console/`, not routes.',
        ...public_,
        responses: { '200': { description: 'JavaScript', content: { 'text/javascript': { schema: { type: 'string' } } } } },
      },
    },
    '/console/settings.json': {
      get: {
        tags: ['ops'],
        operationId: 'consoleSettings',
        summary: 'What the console page needs of the server’s settings',
        description:
          '`pageUnacknowledgedAfterSeconds` (PAGE_UNACKNOWLEDGED_AFTER_SECONDS): the page escalates its cue for an SOS nobody acknowledged this long. Nothing secret.',
        ...public_,
        responses: {
          '200': ok('The settings', obj({ pageUnacknowledgedAfterSeconds: { type: 'integer', minimum: 1 } })),
        },
      },
    },
    '/livez': {
      get: {
        tags: ['ops'],
        operationId: 'livez',
        summary: 'Liveness: the process answers',
        ...public_,
        responses: { '200': ok('Alive', obj({ status: { type: 'string', const: 'ok' } })) },
      },
    },
    '/readyz': {
      get: {
        tags: ['ops'],
        operationId: 'readyz',
        summary: 'Readiness: the store answers and the replica is not shutting down',
        description:
          'Turns 503 (`draining`) as soon as SIGTERM arrives, so the load balancer stops sending before the listener closes. The store check is shared by the probes of one second.',
        ...public_,
        responses: {
          '200': ok('Ready', ref('schemas', 'Readiness')),
          '503': {
            description: 'Not ready, or draining',
            content: json({ oneOf: [ref('schemas', 'Readiness'), ref('schemas', 'Error')] }),
          },
        },
      },
    },
    '/metrics': {
      get: {
        tags: ['ops'],
        operationId: 'metrics',
        summary: 'Prometheus metrics (text exposition format)',
        description:
          'Served here unless `METRICS_PORT` gives it a listener of its own (then this path is not found here). With `METRICS_TOKEN` set it needs `Authorization: Bearer <METRICS_TOKEN>` (not a person’s token). The store-wide gauges are read at most once per `METRICS_STORE_CACHE_MS`.',
        ...public_,
        responses: {
          '200': { description: 'Metrics', content: { 'text/plain': { schema: { type: 'string' } } } },
          '401': { description: 'METRICS_TOKEN is set and the request does not carry it', content: json(ref('schemas', 'Error')) },
        },
      },
    },
    '/openapi.json': {
      get: {
        tags: ['ops'],
        operationId: 'openapi',
        summary: 'This document',
        ...public_,
        responses: { '200': ok('OpenAPI 3.1 document', { type: 'object' }) },
      },
    },
  };
}

/** Every named schema, generated together so that shared ones become `$ref`s. */
function schemas(limits: TimerLimits): Record<string, Json> {
  const named: [string, z.ZodType][] = [
    ['GeoPoint', GeoPoint],
    ['Timer', Timer],
    ['TimerList', TimerList],
    ['ArmTimer', ArmBody.extend({ durationSeconds: duration(limits) })],
    ['ExtendTimer', ExtendBody.extend({ seconds: duration(limits) })],
    ['Incident', Incident],
    ['IncidentWithDeliveries', IncidentWithDeliveries],
    ['IncidentList', IncidentList],
    ['Delivery', Delivery],
    ['FailedEscalation', FailedEscalation],
    ['FailedEscalationList', FailedEscalationList],
    ['Notification', Notification],
    ['NotificationList', NotificationList],
    ['SosInput', SosBody],
    ['Contact', Contact],
    ['ContactList', ContactList],
    ['Fix', Fix],
    ['FixInput', FixBody],
    ['FixAnswer', FixAnswer],
    ['Trail', Trail],
    ['TrailList', TrailList],
    ['ContactsInput', ContactsBody],
    ['Readiness', Readiness],
    ['TwilioStatusCallback', TwilioStatusCallback],
    ['TwilioIncomingMessage', TwilioIncomingMessage],
    ['Note', Note],
    ['NoteInput', NoteBody],
    ['AuditLine', AuditLine],
    ['Revocation', Revocation],
    ['PersonalExport', PersonalExport],
    ['Erasure', Erasure],
    ['DuressInput', DuressBody],
    ['DuressState', DuressState],
    ['CheckInInput', CheckInBody],
    ['AuditPage', AuditPage],
    ['Error', ErrorBody],
  ];
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of named) registry.add(schema, { id });
  const { schemas: out } = z.toJSONSchema(registry, { ...generate, uri: (id) => `#/components/schemas/${id}` });
  return Object.fromEntries(Object.entries(out).map(([id, js]) => [id, schemaObject(js)]));
}

/** What every webhook Twilio calls shares: no bearer token, the signature header, the posted form. */
function twilioWebhook(schema: string) {
  return {
    security: [],
    parameters: [{ name: 'X-Twilio-Signature', in: 'header', required: true, schema: { type: 'string' } }],
    requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema: ref('schemas', schema) } } },
  };
}

function twilioWebhookErrors() {
  return {
    '403': errorResponse('`bad_signature`: X-Twilio-Signature is missing or does not match'),
    '413': ref('responses', 'PayloadTooLarge'),
    '415': ref('responses', 'UnsupportedEncoding'),
    '429': ref('responses', 'RateLimited'),
    '500': ref('responses', 'Internal'),
  };
}

function errorResponse(description: string, extraHeaders: Json = {}) {
  return { description, headers: { ...requestId, ...extraHeaders }, content: json(ref('schemas', 'Error')) };
}

/** `limits`: the TimerLimits the TimerService enforces, so documented duration bounds match the running service. */
export function openapiDocument(limits: TimerLimits): OpenApiDocument {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Vigil',
      version: '1',
      summary: 'Backend authority for meeting safety timers',
      description:
        'Arm a timer before meeting a stranger; extend it, check in or cancel. When the deadline passes with no check-in, Vigil ' +
        'opens an SOS incident and texts the emergency contacts. Every answer carries `X-Request-Id` (an incoming one is kept). ' +
        'Errors are `{ error: { code, message, details? } }`. Live events go over Socket.IO (token in `auth.token`).',
    },
    servers: [{ url: '/' }],
    tags: [
      { name: 'timers', description: "A person's own timers" },
      { name: 'contacts', description: 'Emergency contacts' },
      { name: 'tokens', description: "A person's own tokens" },
      { name: 'personal data', description: "A person's own data: export and erasure" },
      { name: 'duress', description: "A person's duress PIN" },
      { name: 'sos', description: 'The panic button' },
      { name: 'notifications', description: "A person's inbox" },
      { name: 'admin', description: 'Moderators (`role: "admin"`)' },
      { name: 'carriers', description: 'Callbacks from SMS carriers' },
      { name: 'ops', description: 'Health, metrics, this document, the console page' },
    ],
    security: [{ bearerAuth: [] }],
    paths: paths(),
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'HS256; `sub` is the user id, `role: "admin"` marks a moderator, `name` the display name.',
        },
      },
      headers: {
        XRequestId: { description: 'Request id (echoed when the client sent a valid one)', schema: { type: 'string' } },
      },
      parameters: {
        TimerId: parameter('id', 'path', true, z.toJSONSchema(IdParam, generate)),
        IncidentId: parameter('id', 'path', true, z.toJSONSchema(IdParam, generate)),
        IdempotencyKey: parameter('Idempotency-Key', 'header', false, z.toJSONSchema(IdempotencyKey, generate)),
        CommandIdempotencyKey: parameter('Idempotency-Key', 'header', false, z.toJSONSchema(CommandIdempotencyKey, generate)),
        SosIdempotencyKey: parameter('Idempotency-Key', 'header', false, z.toJSONSchema(SosIdempotencyKey, generate)),
        NotificationId: parameter('id', 'path', true, z.toJSONSchema(IdParam, generate)),
      },
      responses: {
        BadRequest: errorResponse(
          'Invalid request (`validation_failed`, `out_of_range`, `malformed_json`, `total_duration_exceeded`, `fix_in_future`, `fix_before_timer`)',
        ),
        Unauthorized: errorResponse('Missing, invalid or expired bearer token'),
        Forbidden: errorResponse('Moderators only'),
        NotFound: errorResponse('No such timer, incident, delivery or notification for this caller'),
        Conflict: errorResponse('The command does not apply in the current state; `details.status` says which state when there is one'),
        IdempotencyMismatch: errorResponse(
          '`idempotency_key_reused`: the Idempotency-Key was used with a different request (body, command or timer)',
        ),
        PayloadTooLarge: errorResponse('The body exceeds BODY_LIMIT'),
        UnsupportedEncoding: errorResponse(
          '`unsupported_encoding`: a Content-Encoding other than identity, gzip, deflate, br, or a charset other than utf-8',
        ),
        RateLimited: errorResponse(
          '`rate_limited`: over a request budget (per person; check-ins have their own; per address without a token). ' +
            '`details.budget` names it. Retry after `Retry-After` seconds.',
          { 'Retry-After': { description: 'seconds until the budget refills', schema: { type: 'integer' } } },
        ),
        Internal: errorResponse('Unexpected error; quote the X-Request-Id'),
      },
      schemas: schemas(limits),
    },
  };
}
