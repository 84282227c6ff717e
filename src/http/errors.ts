/** Every error becomes `{ error: { code, message, details? } }` here, and only here. */
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { DomainError, type DomainErrorCode } from '../domain/errors.js';

const STATUS: Record<DomainErrorCode, number> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  idempotency_mismatch: 422,
  rate_limited: 429,
  unavailable: 503,
};

/** A store that is down or busy is usually back within seconds: clients retry after this. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

interface BodyParserError {
  type: string;
  status?: number;
}
const isBodyParserError = (e: unknown): e is BodyParserError =>
  typeof e === 'object' && e !== null && typeof (e as { type?: unknown }).type === 'string' && 'status' in e;

export function sendError(res: Response, status: number, code: string, message: string, details?: Record<string, unknown>) {
  res.locals.errorCode = code; // counted by reason once the response finishes
  res.status(status).json({ error: details ? { code, message, details } : { code, message } });
}

export function errorHandler(log: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return;
    if (err instanceof DomainError) {
      const retry = err.details?.retryAfterSeconds ?? (err.kind === 'unavailable' ? UNAVAILABLE_RETRY_AFTER_SECONDS : undefined);
      if (typeof retry === 'number') res.setHeader('Retry-After', String(retry));
      return sendError(res, STATUS[err.kind], err.code, err.message, err.details);
    }
    if (isBodyParserError(err)) {
      if (err.type === 'entity.too.large') return sendError(res, 413, 'body_too_large', 'the request body is too large');
      if (err.type === 'entity.parse.failed') return sendError(res, 400, 'malformed_json', 'the request body is not valid JSON');
      return sendError(res, err.status ?? 400, 'bad_request', 'the request body could not be read');
    }
    log.error({ err, reqId: req.requestId }, 'unhandled error');
    sendError(res, 500, 'internal', 'something went wrong on our side; the request id is in X-Request-Id');
  };
}

export function notFoundHandler(_req: Request, res: Response) {
  sendError(res, 404, 'route_not_found', 'no such route');
}
