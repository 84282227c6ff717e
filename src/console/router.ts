/**
 * The moderator console at /console: a static page (HTML, CSS, compiled vanilla
 * TypeScript) plus the Socket.IO browser client, all served by Vigil itself. Nothing
 * is fetched from a third party: a safety console must not depend on a CDN being up.
 * The page talks to the same REST API and Socket.IO endpoint as every other client.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { Router, type Response } from 'express';

export interface ConsoleOptions {
  /**
   * Folder with index.html, console.css and the compiled console scripts.
   * Default: `static/` next to the compiled router (dist/console/static); when the
   * router runs from source (tsx, vitest) the built copy in dist/console/static.
   */
  staticDir?: string;
  /** PAGE_UNACKNOWLEDGED_AFTER_SECONDS: the page escalates its cue for an SOS unacknowledged this long (served as settings.json) */
  pageAfterSeconds?: number;
}

// No inline script or style anywhere: the page works under this policy as it stands.
const CSP = [
  "default-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function defaultStaticDir(): string {
  const here = fileURLToPath(import.meta.url);
  const fromSource = here.endsWith('.ts');
  return fromSource ? join(dirname(here), '..', '..', 'dist', 'console', 'static') : join(dirname(here), 'static');
}

/** socket.io ships its browser client; its package exports do not list the file, so go through package.json. */
function socketIoClientFile(): string {
  const pkg = createRequire(import.meta.url).resolve('socket.io/package.json');
  return join(dirname(pkg), 'client-dist', 'socket.io.min.js');
}

function secure(res: Response): void {
  res.setHeader('Content-Security-Policy', CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
}

export function consoleRouter(o: ConsoleOptions = {}): Router {
  const dir = o.staticDir ?? defaultStaticDir();
  const ioClient = socketIoClientFile();
  const r = Router();

  r.use((_req, res, next) => {
    secure(res);
    next();
  });

  r.get('/', (req, res) => {
    // relative asset URLs need the trailing slash: /console → /console/
    if (!req.originalUrl.split('?')[0]?.endsWith('/')) return res.redirect(301, `${req.baseUrl}/`);
    if (!existsSync(join(dir, 'console.js'))) {
      res.status(503).type('text/plain').send('The console is not built: run `npm run build`.\n');
      return;
    }
    res.setHeader('Cache-Control', 'no-store');
    // a root, not an absolute path: `send` refuses dot segments in the path it is given,
    // and Vigil may be installed under ~/.cache, ~/.npm/_npx or ~/.local
    res.sendFile('index.html', { root: dir });
  });

  // what the page needs of the server's settings: nothing secret, no token needed
  r.get('/settings.json', (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.json({ pageUnacknowledgedAfterSeconds: o.pageAfterSeconds ?? 60 });
  });

  r.get('/socket.io.min.js', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.sendFile(basename(ioClient), { root: dirname(ioClient) });
  });

  r.use(
    express.static(dir, {
      index: false,
      redirect: false,
      dotfiles: 'ignore',
      fallthrough: true,
      setHeaders: (res) => res.setHeader('Cache-Control', 'no-cache'),
    }),
  );

  return r;
}
