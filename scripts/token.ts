/**
 * Prints a token signed with the configured secret (JWT_SECRET, or the one kept in DATA_DIR
 * in embedded mode), or with a private key (`--key private.pem`: RS256 for an RSA key, ES256
 * for an EC P-256 key; `--kid` names it when the replicas' JWKS lists several). It always
 * expires (--days, at most JWT_MAX_LIFETIME_SECONDS) and carries JWT_ISSUER / JWT_AUDIENCE
 * when they are set.
 *   npm run token -- --user alice [--admin] [--name "Alice"] [--days 7] [--key private.pem [--kid 2025-06]]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { signingKeyFromPem } from '../src/auth/keys.js';
import { signToken, type SigningKey } from '../src/auth/tokens.js';

const USAGE = 'usage: npm run token -- --user <id> [--admin] [--name "Display Name"] [--days 7] [--key private.pem [--kid id]]\n';
const { values } = parseArgs({
  options: {
    user: { type: 'string' },
    admin: { type: 'boolean', default: false },
    name: { type: 'string' },
    days: { type: 'string', default: '7' },
    key: { type: 'string' },
    kid: { type: 'string' },
  },
});
function fail(message: string): never {
  process.stderr.write(message);
  process.exit(2);
}
if (!values.user) fail(USAGE);
if (values.kid && !values.key) fail(`--kid names the key of --key\n${USAGE}`);

const config = loadConfig(process.env);
const days = Number(values.days);
const seconds = Math.round(days * 86400);
// every token expires, and never later than the service accepts (JWT_MAX_LIFETIME_SECONDS)
if (!Number.isFinite(seconds) || seconds <= 0 || seconds > config.tokens.maxLifetimeSeconds) {
  fail(`--days must be > 0 and at most ${config.tokens.maxLifetimeSeconds / 86400} (JWT_MAX_LIFETIME_SECONDS)\n`);
}

function privateKey(file: string): SigningKey {
  try {
    return { ...signingKeyFromPem(readFileSync(file, 'utf8')), ...(values.kid ? { kid: values.kid } : {}) };
  } catch (err) {
    return fail(`--key ${file}: ${err instanceof Error ? err.message : String(err)}\n`);
  }
}
const key = values.key
  ? privateKey(values.key)
  : (config.jwtSecret ?? fail('no JWT_SECRET is configured (only public keys): sign with --key private.pem\n'));
const { issuer, audience } = config.tokens;
process.stdout.write(`${signToken(key, { sub: values.user, admin: values.admin, name: values.name }, seconds, { issuer, audience })}\n`);
