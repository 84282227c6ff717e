/**
 * Every code a DomainError carries, with its kind and what it means to the client that gets
 * it. A code not listed here does not compile (src/domain/errors.ts takes only these), and the
 * kind fixes its HTTP status (src/http/error-codes.ts); the error table in docs/errors.md is
 * generated from both (`npm run docs`).
 */

/** The one small set of error kinds every layer raises. */
export type DomainErrorKind =
  'not_found' | 'conflict' | 'invalid' | 'unauthorized' | 'forbidden' | 'idempotency_mismatch' | 'rate_limited' | 'unavailable';

type Declared = Readonly<Record<string, { readonly kind: DomainErrorKind; readonly meaning: string }>>;

export const DOMAIN_ERRORS = {
  // invalid
  validation_failed: {
    kind: 'invalid',
    meaning: 'the body, query or a parameter does not match the schema; `details.issues` lists each problem',
  },
  out_of_range: { kind: 'invalid', meaning: 'a duration outside `TIMER_MIN_SECONDS` … `TIMER_MAX_SECONDS`' },
  total_duration_exceeded: {
    kind: 'invalid',
    meaning: 'the extension would make the timer run longer than `TIMER_MAX_TOTAL_SECONDS` in all',
  },
  fix_in_future: { kind: 'invalid', meaning: 'a location fix whose time `at` is in the future' },
  fix_before_timer: { kind: 'invalid', meaning: 'a location fix whose time `at` is before the timer started' },
  note_invalid: { kind: 'invalid', meaning: 'a moderator note that is empty, too long, or holds control, bidi or zero-width characters' },
  reason_required: {
    kind: 'invalid',
    meaning:
      'a moderator looked up a person’s timers while the person has no open incident without a `reason` (recorded in the audit: [privacy.md](privacy.md#the-audit))',
  },
  reason_invalid: {
    kind: 'invalid',
    meaning: 'a stated `reason` that is empty, too long, or holds control, bidi or zero-width characters',
  },
  invalid_cursor: { kind: 'invalid', meaning: 'a `cursor` this API did not issue' },
  unsupported_language: {
    kind: 'invalid',
    meaning:
      'a contact `language` Vigil has no texts in; `details.supported` lists those it has ([sms.md](sms.md#languages-time-zones-and-the-reference))',
  },
  unknown_time_zone: {
    kind: 'invalid',
    meaning: 'a `timeZone` that is not an IANA time zone name (`Europe/Madrid`, `America/Bogota`, `UTC`)',
  },
  invalid_write_concern: { kind: 'invalid', meaning: 'start-up only: the MongoDB write concern is neither `majority` nor a number ≥ 1' },
  invalid_operation_timeout: {
    kind: 'invalid',
    meaning: 'start-up only: the MongoDB operation bound is not above the write timeout (a write must hear `wtimeout` first)',
  },
  // unauthorized, forbidden
  unauthorized: { kind: 'unauthorized', meaning: 'no bearer token, or one that is invalid, expired, without `exp` or living too long' },
  token_revoked: {
    kind: 'unauthorized',
    meaning:
      'the token was issued before its person’s tokens were revoked (by them or a moderator): ask for a new one ([security.md](security.md#revocation))',
  },
  token_issued_in_future: {
    kind: 'unauthorized',
    meaning: 'the token’s `iat` is further in the future than the clock skew allowed (60 s): the issuer’s clock is wrong',
  },
  forbidden: { kind: 'forbidden', meaning: 'a moderator route (`role: "admin"`) called without the role' },
  // not found
  timer_not_found: { kind: 'not_found', meaning: 'no such timer for this caller (also for someone else’s timer)' },
  incident_not_found: { kind: 'not_found', meaning: 'no such incident' },
  delivery_not_found: { kind: 'not_found', meaning: 'no such delivery (text)' },
  notification_not_found: { kind: 'not_found', meaning: 'no such notification for this caller' },
  // conflict
  live_timer_exists: { kind: 'conflict', meaning: 'the person already has a live timer; `details.timer` names it' },
  timer_wrong_state: {
    kind: 'conflict',
    meaning: 'the command does not apply to the timer as it is; `details.status` and `details.timer` carry it',
  },
  timer_not_live: { kind: 'conflict', meaning: 'a location fix for a timer that is neither live nor in an open SOS' },
  extension_limit: { kind: 'conflict', meaning: 'the timer was already extended `TIMER_MAX_EXTENSIONS` times' },
  deadline_passed: { kind: 'conflict', meaning: 'the deadline has passed: the timer can no longer be extended' },
  escalation_in_progress: { kind: 'conflict', meaning: '"I’m safe" while the SOS is being opened; retry after `Retry-After`' },
  incident_wrong_state: {
    kind: 'conflict',
    meaning: 'the incident command does not apply in its current state; `details.status` carries it',
  },
  incident_open: {
    kind: 'conflict',
    meaning: '`DELETE /v1/me` while an SOS of the caller is open: nothing is erased; ask again once it is closed (`details.incidentId`)',
  },
  timer_live: {
    kind: 'conflict',
    meaning: '`DELETE /v1/me` while a timer of the caller is running: nothing is erased; check in or cancel first (`details.timerId`)',
  },
  incident_busy: { kind: 'conflict', meaning: 'the incident kept changing during the command; retry' },
  incident_redacted: { kind: 'conflict', meaning: 'the incident was anonymised by retention: it takes no new notes' },
  incident_false_alarm: { kind: 'conflict', meaning: 'resend refused: the person checked in (false alarm), their SOS is not sent again' },
  delivery_busy: { kind: 'conflict', meaning: 'the delivery kept changing during the resend; retry' },
  delivery_not_resendable: { kind: 'conflict', meaning: 'resend refused: only a `dead` or `failed` text can be sent again' },
  delivery_redacted: { kind: 'conflict', meaning: 'resend refused: the text was anonymised by retention' },
  sos_not_sent: {
    kind: 'conflict',
    meaning: 'resend refused: an all-clear whose SOS to that contact has not gone out (or its outcome is not known yet)',
  },
  arm_contended: { kind: 'conflict', meaning: 'MongoDB: arming kept racing changes to the person’s live timer; retry' },
  extend_contended: { kind: 'conflict', meaning: 'MongoDB: the timer kept changing while it was being extended; retry' },
  sos_contended: { kind: 'conflict', meaning: 'MongoDB: the panic SOS kept racing other changes; retry' },
  timer_id_taken: { kind: 'conflict', meaning: 'MongoDB: a timer with the generated id already exists (never expected)' },
  // idempotency
  idempotency_key_reused: {
    kind: 'idempotency_mismatch',
    meaning: 'the `Idempotency-Key` was used for another request (body, command or timer); nothing changed',
  },
  idempotency_mismatch: { kind: 'idempotency_mismatch', meaning: 'a note’s `Idempotency-Key` was used for another note; nothing changed' },
  // rate limited
  rate_limited: {
    kind: 'rate_limited',
    meaning: 'over a request budget (`details.budget`: `person`, `checkin`, `ip`) or the location fix rate; retry after `Retry-After`',
  },
  // unavailable
  store_busy: { kind: 'unavailable', meaning: 'SQLite: another process held the file’s write lock past `SQLITE_BUSY_TIMEOUT_MS`' },
  store_closed: { kind: 'unavailable', meaning: 'the store is closed (the replica is shutting down)' },
  store_unavailable: { kind: 'unavailable', meaning: 'MongoDB cannot be reached' },
  store_unreachable: { kind: 'unavailable', meaning: 'start-up only: MongoDB did not answer within `MONGODB_SERVER_SELECTION_TIMEOUT_MS`' },
  store_not_connected: { kind: 'unavailable', meaning: 'the MongoDB connection is not open' },
  store_write_unconfirmed: {
    kind: 'unavailable',
    meaning: 'MongoDB did not confirm a write in time: its outcome is unknown; retrying the request is safe',
  },
  lock_unavailable: {
    kind: 'unavailable',
    meaning: 'the Redis lock did not answer (the sweep carries on without it; not answered to clients)',
  },
} as const satisfies Declared;

export type DomainCode = keyof typeof DOMAIN_ERRORS;

/** The codes declared with kind `K`. */
export type CodeOf<K extends DomainErrorKind> = {
  [C in DomainCode]: (typeof DOMAIN_ERRORS)[C]['kind'] extends K ? C : never;
}[DomainCode];
