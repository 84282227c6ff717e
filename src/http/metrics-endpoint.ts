/**
 * The Prometheus scrape, `GET /metrics`: on the main listener, or, with METRICS_PORT, on a
 * listener of its own that serves nothing else (kept off the load balancer and the ingress,
 * so the public never reaches it), and behind `Authorization: Bearer <METRICS_TOKEN>` when
 * that is set, wherever it is served. What a scrape costs the store is bounded by the cache
 * of the store gauges (metrics/store.ts), not here.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** Whether a request may scrape: always when no token is configured, else only with `Bearer <token>`. */
export function scrapeAllowed(authorization: string | undefined, token: string | undefined): boolean {
  if (token === undefined) return true;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!m?.[1]) return false;
  // compared as digests: equal lengths, and no early exit that times the token out
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(m[1]), digest(token));
}

function answerJson(res: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store', ...headers });
  res.end(JSON.stringify({ error: { code, message } }));
}

/** Answers one scrape (the token already checked): the registry's text page, never cached by a proxy. */
export async function writeScrape(res: ServerResponse, registry: Registry): Promise<void> {
  const page = await registry.metrics();
  res.writeHead(200, { 'Content-Type': registry.contentType, 'Cache-Control': 'no-store' });
  res.end(page);
}

/** The 401 of a scrape without the right token (`unauthorized`, as every missing or wrong bearer token). */
export function refuseScrape(res: ServerResponse): void {
  answerJson(res, 401, 'unauthorized', 'scraping needs the metrics bearer token', { 'WWW-Authenticate': 'Bearer realm="metrics"' });
}

export interface MetricsListenerOptions {
  port: number;
  host: string;
  registry: Registry;
  token?: string;
  /** open connections at most (Prometheus needs one or two per replica) */
  maxConnections: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** a scrape that fails (a collect that throws) is logged here */
  onError: (err: unknown) => void;
}

export interface MetricsListener {
  /** the port it listens on (METRICS_PORT, or the one the system chose for 0) */
  port: number;
  /** stop listening and close its connections; safe to call twice */
  close(): Promise<void>;
}

/** The listener of METRICS_PORT: `GET /metrics` and nothing else. */
export async function startMetricsListener(o: MetricsListenerOptions): Promise<MetricsListener> {
  const server: Server = createServer(
    { headersTimeout: o.headersTimeoutMs, requestTimeout: o.requestTimeoutMs, keepAliveTimeout: o.keepAliveTimeoutMs },
    (req: IncomingMessage, res: ServerResponse) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== '/metrics') return answerJson(res, 404, 'route_not_found', 'this listener serves GET /metrics only');
      if (req.method !== 'GET' && req.method !== 'HEAD')
        return answerJson(res, 404, 'route_not_found', 'this listener serves GET /metrics only');
      if (!scrapeAllowed(req.headers.authorization, o.token)) return refuseScrape(res);
      writeScrape(res, o.registry).catch((err: unknown) => {
        o.onError(err);
        if (!res.headersSent) answerJson(res, 500, 'internal', 'the metrics could not be collected');
        else res.destroy();
      });
    },
  );
  server.maxConnections = o.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  let closing: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
