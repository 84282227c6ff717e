/** Express middleware around the bearer token (../auth/tokens.ts). */
import type { NextFunction, Request, Response } from 'express';
import { unauthorized, verifyToken, type Principal, type TokenPolicy } from '../auth/tokens.js';
import { DomainError } from '../domain/errors.js';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
    /** why the request carries no principal (answered by `requirePrincipal`) */
    authError?: DomainError;
    requestId?: string;
  }
}

/**
 * Reads the bearer token, if any, before anything else looks at the request (rate limits
 * key on the person; bodies are read only after). Never refuses by itself.
 */
export function identify(secret: string | undefined, policy?: TokenPolicy) {
  return (req: Request, _res: Response, next: NextFunction) => {
    const h = req.headers.authorization;
    if (!h || !h.startsWith('Bearer ')) {
      req.authError = unauthorized('send a bearer token: Authorization: Bearer <jwt>');
      return next();
    }
    try {
      req.principal = verifyToken(secret, h.slice(7).trim(), policy);
    } catch (err) {
      req.authError = err instanceof DomainError ? err : unauthorized('the token is not valid');
    }
    next();
  };
}

/** 401 unless `identify` found a valid token. */
export function requirePrincipal(req: Request, _res: Response, next: NextFunction) {
  if (!req.principal) throw req.authError ?? unauthorized('send a bearer token: Authorization: Bearer <jwt>');
  next();
}

/** Reads and requires the token in one step (routers used on their own). */
export function bearer(secret: string | undefined, policy?: TokenPolicy) {
  const read = identify(secret, policy);
  return (req: Request, res: Response, next: NextFunction) => read(req, res, () => requirePrincipal(req, res, next));
}

export function adminOnly(req: Request, _res: Response, next: NextFunction) {
  if (!req.principal?.admin) throw new DomainError('forbidden', 'forbidden', 'this route is for moderators (role "admin")');
  next();
}

export function principal(req: Request): Principal {
  if (!req.principal) throw unauthorized('not signed in');
  return req.principal;
}
