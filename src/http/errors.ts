/** Every error becomes `{ error: { code, message, details? } }` here, and only here. */
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { DomainError } from '../domain/errors.js';
import { KIND_STATUS, type ApiErrorCode, type HttpCode, type StatusOf } from './error-codes.js';

/** A store that is down or busy is usually back within seconds: clients retry after this. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/** The 4xx an error carries (body-parser, raw-body, send, the router's `%` decoding), if any. */
function clientStatus(e: unknown): number | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const { status, statusCode, code } = e as { status?: unknown; statusCode?: unknown; code?: unknown };
  const s = typeof status === 'number' ? status : typeof statusCode === 'number' ? statusCode : undefined;
  if (s !== undefined && s >= 400 && s < 500) return s;
  // a corrupt gzip/deflate/br body surfaces as a zlib error
  if (typeof code === 'string' && /^(Z_|ERR_ZLIB|ERR__ERROR_FORMAT)/.test(code)) return 400;
  return undefined;
}

/** The machine-readable code and message of a client mistake; never the error's own text. */
function describe(status: number, type: string | undefined): { code: HttpCode; message: string } {
  if (type === 'entity.too.large' || status === 413) return { code: 'body_too_large', message: 'the request body is too large' };
  if (type === 'entity.parse.failed') return { code: 'malformed_json', message: 'the request body is not valid JSON' };
  if (type === 'encoding.unsupported' || type === 'charset.unsupported' || status === 415)
    return {
      code: 'unsupported_encoding',
      message: 'the Content-Encoding or charset of the body is not supported (use identity, gzip, deflate or br; utf-8)',
    };
  if (type === 'request.aborted') return { code: 'request_aborted', message: 'the request was aborted before its body arrived' };
  if (type === 'request.size.invalid' || type === 'stream.encoding.set')
    return { code: 'bad_request', message: 'the request body could not be read' };
  if (status === 404) return { code: 'not_found', message: 'no such resource' };
  if (status === 400 && type === undefined)
    return { code: 'bad_request', message: 'the request could not be read (a corrupt body or a malformed % escape in the path)' };
  return { code: 'bad_request', message: 'the request could not be read' };
}

function writeError(res: Response, status: number, code: ApiErrorCode, message: string, details?: Record<string, unknown>) {
  res.locals.errorCode = code; // counted by reason once the response finishes
  res.status(status).json({ error: details ? { code, message, details } : { code, message } });
}

/** An error answer; the status must be the one its code is declared with (./error-codes.ts). */
export function sendError<C extends ApiErrorCode>(
  res: Response,
  status: StatusOf<C>,
  code: C,
  message: string,
  details?: Record<string, unknown>,
) {
  writeError(res, status, code, message, details);
}

export function errorHandler(log: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return;
    if (err instanceof DomainError) {
      const retry = err.details?.retryAfterSeconds ?? (err.kind === 'unavailable' ? UNAVAILABLE_RETRY_AFTER_SECONDS : undefined);
      if (typeof retry === 'number') res.setHeader('Retry-After', String(retry));
      return writeError(res, KIND_STATUS[err.kind], err.code, err.message, err.details);
    }
    const status = clientStatus(err);
    if (status !== undefined) {
      const type = (err as { type?: unknown }).type;
      const { code, message } = describe(status, typeof type === 'string' ? type : undefined);
      // a client's mistake, not ours: no stack, not at error level, and not its message
      // (a JSON parser's message can quote the body, a decoding error the path)
      log.info({ reqId: req.requestId, status, code, type }, 'client error');
      return writeError(res, status, code, message);
    }
    log.error({ err, reqId: req.requestId }, 'unhandled error');
    writeError(res, 500, 'internal', 'something went wrong on our side; the request id is in X-Request-Id');
  };
}

export function notFoundHandler(_req: Request, res: Response) {
  sendError(res, 404, 'route_not_found', 'no such route');
}
