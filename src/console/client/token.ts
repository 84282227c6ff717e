/**
 * Reads a pasted JWT in the browser. This is not verification (the server does that);
 * it lets the page refuse a non-moderator token before any socket is opened with it.
 */
export interface Claims {
  sub: string;
  admin: boolean;
  name?: string;
  /** expiry, ms since the epoch */
  expiresAt?: number;
}

export type TokenCheck = { ok: true; token: string; claims: Claims } | { ok: false; reason: string };

function base64UrlJson(part: string): unknown {
  const b64 = part
    .replace(/-/g, '+')
    .replace(/_/g, '/')
    .padEnd(Math.ceil(part.length / 4) * 4, '=');
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return JSON.parse(new TextDecoder().decode(bytes)) as unknown;
}

export function checkModeratorToken(raw: string, nowMs: number): TokenCheck {
  const token = raw.trim().replace(/^Bearer\s+/i, '');
  if (!token) return { ok: false, reason: 'Paste a moderator token first.' };
  const parts = token.split('.');
  if (parts.length !== 3 || !parts[1]) return { ok: false, reason: 'This is not a JWT: a token has three parts separated by dots.' };
  let payload: unknown;
  try {
    payload = base64UrlJson(parts[1]);
  } catch {
    return { ok: false, reason: 'This token cannot be read: its payload is not base64url-encoded JSON.' };
  }
  if (typeof payload !== 'object' || payload === null) return { ok: false, reason: 'This token has no claims.' };
  const p = payload as Record<string, unknown>;
  if (typeof p.sub !== 'string' || !p.sub) return { ok: false, reason: 'This token names no user (no "sub" claim).' };
  const claims: Claims = {
    sub: p.sub,
    admin: p.role === 'admin',
    name: typeof p.name === 'string' ? p.name : undefined,
    expiresAt: typeof p.exp === 'number' ? p.exp * 1000 : undefined,
  };
  if (claims.expiresAt !== undefined && claims.expiresAt <= nowMs) {
    return { ok: false, reason: `This token expired at ${new Date(claims.expiresAt).toLocaleString()}. Mint a new one.` };
  }
  if (!claims.admin) {
    return {
      ok: false,
      reason: `This token belongs to “${claims.sub}”, who is not a moderator. The console only accepts tokens with the moderator role (role "admin").`,
    };
  }
  return { ok: true, token, claims };
}
