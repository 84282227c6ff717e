/** Express middleware around the bearer token (../auth/tokens.ts). */
import type { NextFunction, Request, Response } from 'express';
import {
  isRevoked,
  tokenRevoked,
  unauthorized,
  verifyToken,
  type Principal,
  type RevocationCheck,
  type TokenPolicy,
} from '../auth/tokens.js';
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
 * key on the person; bodies are read only after). With `revocation`, a token issued before its
 * person's "tokens not before" stamp is `token_revoked`; a stamp that cannot be read (store
 * down) leaves the request without a principal (503 from `requirePrincipal`). Never refuses by itself.
 */
export function identify(secret: string | undefined, policy?: TokenPolicy, revocation?: RevocationCheck) {
  return (req: Request, _res: Response, next: NextFunction) => {
    const h = req.headers.authorization;
    if (!h || !h.startsWith('Bearer ')) {
      req.authError = unauthorized('send a bearer token: Authorization: Bearer <jwt>');
      return next();
    }
    let p: Principal;
    try {
      p = verifyToken(secret, h.slice(7).trim(), policy);
    } catch (err) {
      req.authError = err instanceof DomainError ? err : unauthorized('the token is not valid');
      return next();
    }
    if (!revocation) {
      req.principal = p;
      return next();
    }
    revocation.notBefore([p.userId]).then(
      (stamps) => {
        if (isRevoked(p, stamps.get(p.userId))) req.authError = tokenRevoked();
        else req.principal = p;
        next();
      },
      (err: unknown) => {
        req.authError = err instanceof DomainError ? err : unauthorized('the token could not be checked');
        next();
      },
    );
  };
}

/** 401 unless `identify` found a valid token. */
export function requirePrincipal(req: Request, _res: Response, next: NextFunction) {
  if (!req.principal) throw req.authError ?? unauthorized('send a bearer token: Authorization: Bearer <jwt>');
  next();
}

/** Reads and requires the token in one step (routers used on their own). */
export function bearer(secret: string | undefined, policy?: TokenPolicy, revocation?: RevocationCheck) {
  const read = identify(secret, policy, revocation);
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
