/**
 * Token revocation (docs/security.md, "Revocation"): the person revokes every token of theirs
 * issued until now (`/v1/me/tokens/revoke`, the token of the request included); a moderator
 * anyone's (`/v1/admin/users/:userId/revoke-tokens`, audited as `user.revoke_tokens`). Either
 * cuts off the person's sockets on every replica at once.
 */
import { Router } from 'express';
import type { TokenRevocations } from '../../app/token-revocations.js';
import { principal } from '../auth.js';
import { EmptyBody, IdParam, parse } from '../validation.js';

const answer = (userId: string, stamp: Date) => ({ userId, revokedBefore: stamp.toISOString() });

/** Mounted at /v1/me/tokens. */
export function ownTokenRoutes(revocations: TokenRevocations): Router {
  const r = Router();
  r.post('/revoke', async (req, res) => {
    parse(EmptyBody, req.body, 'request body');
    const { userId } = principal(req);
    res.json(answer(userId, await revocations.revoke(userId)));
  });
  return r;
}

/** Mounted at /v1/admin behind adminOnly. */
export function adminTokenRoutes(revocations: TokenRevocations): Router {
  const r = Router();
  r.post('/users/:userId/revoke-tokens', async (req, res) => {
    parse(EmptyBody, req.body, 'request body');
    const userId = parse(IdParam, req.params.userId, 'user id');
    res.json(answer(userId, await revocations.revoke(userId, principal(req).userId)));
  });
  return r;
}
