/**
 * Bearer JWT (HS256), shared by REST and the Socket.IO handshake. `sub` is the user id;
 * `role: "admin"` marks a moderator; `name` is the display name used in SOS texts.
 */
import jwt from 'jsonwebtoken';
import { DomainError } from '../domain/errors.js';

export interface Principal {
  userId: string;
  admin: boolean;
  name?: string;
}

export const unauthorized = (message: string) => new DomainError('unauthorized', 'unauthorized', message);

export function verifyToken(secret: string, token: string): Principal {
  let claims: string | jwt.JwtPayload;
  try {
    claims = jwt.verify(token, secret, { algorithms: ['HS256'] });
  } catch (err) {
    const why = err instanceof jwt.TokenExpiredError ? 'the token has expired' : 'the token is not valid';
    throw unauthorized(why);
  }
  if (typeof claims === 'string' || typeof claims.sub !== 'string' || claims.sub.length === 0 || claims.sub.length > 200) {
    throw unauthorized('the token has no subject');
  }
  const name = typeof claims.name === 'string' && claims.name.trim() ? claims.name.trim().slice(0, 80) : undefined;
  return { userId: claims.sub, admin: claims.role === 'admin', name };
}

export function signToken(secret: string, p: { sub: string; admin?: boolean; name?: string }, expiresInSeconds = 7 * 24 * 3600): string {
  const claims: Record<string, string> = {};
  if (p.admin) claims.role = 'admin';
  if (p.name) claims.name = p.name;
  return jwt.sign(claims, secret, { algorithm: 'HS256', subject: p.sub, expiresIn: expiresInSeconds });
}
