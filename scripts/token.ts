/**
 * Prints a development token signed with the configured secret (JWT_SECRET, or the
 * one kept in DATA_DIR in embedded mode).
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
process.stdout.write(
  `${signToken(config.jwtSecret, { sub: values.user, admin: values.admin, name: values.name }, Math.round(days * 86400))}\n`,
);
