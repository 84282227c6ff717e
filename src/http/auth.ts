/** Express middleware around the bearer token (../auth/tokens.ts). */
import type { NextFunction, Request, Response } from 'express';
import { unauthorized, verifyToken, type Principal } from '../auth/tokens.js';
import { DomainError } from '../domain/errors.js';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
    requestId?: string;
  }
}

export function bearer(secret: string) {
  return (req: Request, _res: Response, next: NextFunction) => {
    const h = req.headers.authorization;
    if (!h || !h.startsWith('Bearer ')) throw unauthorized('send a bearer token: Authorization: Bearer <jwt>');
    req.principal = verifyToken(secret, h.slice(7).trim());
    next();
  };
}

export function adminOnly(req: Request, _res: Response, next: NextFunction) {
  if (!req.principal?.admin) throw new DomainError('forbidden', 'forbidden', 'this route is for moderators (role "admin")');
  next();
}

export function principal(req: Request): Principal {
  if (!req.principal) throw unauthorized('not signed in');
  return req.principal;
}
