/**
 * Prints a development token signed with the configured secret (JWT_SECRET, or the
 * one kept in DATA_DIR in embedded mode). It always expires (--days, at most
 * JWT_MAX_LIFETIME_SECONDS) and carries JWT_ISSUER / JWT_AUDIENCE when they are set.
 *   npm run token -- --user alice [--admin] [--name "Alice"] [--days 7]
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { signToken } from '../src/auth/tokens.js';

const { values } = parseArgs({
  options: {
    user: { type: 'string' },
    admin: { type: 'boolean', default: false },
    name: { type: 'string' },
    days: { type: 'string', default: '7' },
  },
});
if (!values.user) {
  process.stderr.write('usage: npm run token -- --user <id> [--admin] [--name "Display Name"] [--days 7]\n');
  process.exit(2);
}
const config = loadConfig(process.env);
const days = Number(values.days);
const seconds = Math.round(days * 86400);
// every token expires, and never later than the service accepts (JWT_MAX_LIFETIME_SECONDS)
if (!Number.isFinite(seconds) || seconds <= 0 || seconds > config.tokens.maxLifetimeSeconds) {
  process.stderr.write(`--days must be > 0 and at most ${config.tokens.maxLifetimeSeconds / 86400} (JWT_MAX_LIFETIME_SECONDS)\n`);
  process.exit(2);
}
const { issuer, audience } = config.tokens;
process.stdout.write(
  `${signToken(config.jwtSecret, { sub: values.user, admin: values.admin, name: values.name }, seconds, { issuer, audience })}\n`,
);
