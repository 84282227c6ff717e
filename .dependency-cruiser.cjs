/**
 * The layering of src/, checked by `npm run lint:layers` (part of `npm test`).
 * docs/architecture.md draws the same picture; its table of these rules is generated from
 * each rule's name and comment (`npm run docs`), so every rule carries a comment.
 */
const ADAPTERS = [
  '^src/store/(sqlite|mongo)/',
  '^src/lock/(redis-lock|in-process-lock)\\.ts$',
  '^src/sms/(twilio|fast2sms|console|failover)\\.ts$',
  '^src/realtime/redis-adapter\\.ts$',
  '^src/http/rate-limit-redis\\.ts$',
  '^src/location/(redis|memory)-fixes\\.ts$',
];

module.exports = {
  forbidden: [
    {
      name: 'domain-is-pure',
      comment:
        'src/domain holds the rules: it imports nothing of ours outside domain/, and no package or I/O module (deterministic hashing from crypto is allowed).',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { pathNot: ['^src/domain/', '^crypto$'] },
    },
    {
      name: 'texts-only-render',
      comment: 'src/texts renders the texts from their templates: it imports the domain and the message-format library, nothing with I/O.',
      severity: 'error',
      from: { path: '^src/texts/' },
      to: { pathNot: ['^src/texts/', '^src/domain/', 'intl-messageformat'] },
    },
    {
      name: 'sms-only-sends',
      comment: 'Carriers send; they never read or write the store.',
      severity: 'error',
      from: { path: '^src/sms/' },
      to: { path: '^src/store/' },
    },
    {
      name: 'http-does-not-run-workers',
      comment: 'The API drives use cases (app/); the sweep and dispatch loops belong to worker/.',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/worker/' },
    },
    {
      name: 'app-is-driven-not-driving',
      comment: 'Use cases know ports, not the HTTP layer, the workers or the Socket.IO server.',
      severity: 'error',
      from: { path: '^src/app/' },
      to: { path: ['^src/http/', '^src/worker/', '^src/realtime/server\\.ts$', '^src/main\\.ts$'] },
    },
    {
      name: 'only-the-composition-root-chooses-adapters',
      comment:
        'The composition root (src/main.ts and src/compose/) chooses the adapters in one file, compose/adapters.ts; the rest of it, and everything else, depends on ports.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/compose/adapters\\.ts$', ...ADAPTERS] },
      to: { path: ADAPTERS },
    },
    {
      name: 'adapters-do-not-know-each-other',
      comment:
        'One adapter per file: an adapter imports its port and domain types, not another adapter (the SQLite store does not import the Mongo one).',
      severity: 'error',
      from: { path: '^src/store/sqlite/' },
      to: { path: '^src/store/mongo/' },
    },
    {
      name: 'adapters-do-not-know-each-other-mongo',
      comment: 'The same the other way: the Mongo store does not import the SQLite one.',
      severity: 'error',
      from: { path: '^src/store/mongo/' },
      to: { path: '^src/store/sqlite/' },
    },
    {
      name: 'console-client-is-browser-code',
      comment: 'The console runs in the browser: it imports nothing from the server.',
      severity: 'error',
      from: { path: '^src/console/client/' },
      to: { pathNot: ['^src/console/client/'] },
    },
    {
      name: 'no-circular',
      comment: 'No import cycle, between files or between folders.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'src-does-not-import-tests',
      comment: 'The product never imports test/, scripts/ or bench/ (they import src/, not the other way).',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|scripts|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['^dist/', '^node_modules/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
      extensions: ['.ts', '.js'],
    },
  },
};
