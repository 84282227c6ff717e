/**
 * The HTTP side of the error codes: the status of each domain error kind, and the codes only
 * the HTTP layer answers (a body it cannot read, an unknown route, a replica shutting down, a
 * bad receipt). With src/domain/error-codes.ts this is every code a client can get; the table
 * in docs/errors.md is generated from the two (`npm run docs`).
 */
import { DOMAIN_ERRORS, type DomainCode, type DomainErrorKind } from '../domain/error-codes.js';

export const KIND_STATUS = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  idempotency_mismatch: 422,
  rate_limited: 429,
  unavailable: 503,
} as const satisfies Record<DomainErrorKind, number>;

export const HTTP_ERRORS = {
  bad_request: {
    status: 400,
    meaning: 'the request could not be read: a corrupt gzip/deflate/br body, a malformed `%` escape in the path, malformed HTTP',
  },
  malformed_json: { status: 400, meaning: 'the body is not valid JSON' },
  request_aborted: { status: 400, meaning: 'the client went away before its body arrived' },
  invalid_receipt: { status: 400, meaning: 'a Twilio receipt without `MessageSid` or `MessageStatus`' },
  bad_signature: { status: 403, meaning: 'a Twilio webhook (receipt or reply) whose `X-Twilio-Signature` is missing or does not match' },
  not_found: { status: 404, meaning: 'a 404 raised below the routes (rare: an unknown path answers `route_not_found`)' },
  route_not_found: { status: 404, meaning: 'no such route' },
  request_timeout: { status: 408, meaning: 'the headers or the whole request did not arrive in time' },
  body_too_large: { status: 413, meaning: 'the body is larger than `BODY_LIMIT`' },
  unsupported_encoding: {
    status: 415,
    meaning: 'a Content-Encoding other than identity, gzip, deflate or br, or a charset other than utf-8',
  },
  headers_too_large: { status: 431, meaning: 'the request headers are too large' },
  internal: { status: 500, meaning: 'an unexpected error; quote the `X-Request-Id`' },
  draining: { status: 503, meaning: 'the replica is shutting down (`/readyz`)' },
  sockets_full: {
    status: 503,
    meaning:
      'a Socket.IO handshake refused: the sockets of this replica hold its share of `HTTP_MAX_CONNECTIONS` (the rest is kept for plain HTTP); retry later',
  },
} as const satisfies Readonly<Record<string, { readonly status: number; readonly meaning: string }>>;

export type HttpCode = keyof typeof HTTP_ERRORS;
export type ApiErrorCode = DomainCode | HttpCode;

/** The status a code is answered with, as a type: `sendError` checks its callers against it. */
export type StatusOf<C extends ApiErrorCode> = C extends HttpCode
  ? (typeof HTTP_ERRORS)[C]['status']
  : C extends DomainCode
    ? (typeof KIND_STATUS)[(typeof DOMAIN_ERRORS)[C]['kind']]
    : never;

/** Every code a client can get, with its status and meaning: the source of docs/errors.md. */
export function errorCatalog(): { code: ApiErrorCode; status: number; meaning: string }[] {
  const domain = (Object.keys(DOMAIN_ERRORS) as DomainCode[]).map((code) => ({
    code,
    status: KIND_STATUS[DOMAIN_ERRORS[code].kind],
    meaning: DOMAIN_ERRORS[code].meaning,
  }));
  const http = (Object.keys(HTTP_ERRORS) as HttpCode[]).map((code) => ({ code, ...HTTP_ERRORS[code] }));
  return [...domain, ...http];
}
