/** The REST calls the console makes, with the moderator's bearer token. */
import { syncClock } from './clock.js';
import { field, isFix, isIncidentWithDeliveries, isTimer, type Fix, type IncidentWithDeliveries, type Timer } from './types.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const isList =
  <T>(guard: (x: unknown) => x is T) =>
  (v: unknown): v is T[] =>
    Array.isArray(v) && v.every(guard);

export class Api {
  constructor(private readonly token: string) {}

  private async request(method: 'GET' | 'POST', path: string): Promise<unknown> {
    const started = performance.now();
    let res: Response;
    try {
      res = await fetch(path, {
        method,
        headers: {
          Authorization: `Bearer ${this.token}`,
          Accept: 'application/json',
          ...(method === 'POST' ? { 'Content-Type': 'application/json' } : {}),
        },
        body: method === 'POST' ? '{}' : undefined,
        cache: 'no-store',
        credentials: 'omit',
      });
    } catch (err) {
      throw new ApiError(0, 'network', `Vigil cannot be reached (${err instanceof Error ? err.message : String(err)}).`);
    }
    const body: unknown = await res.json().catch(() => undefined);
    if (!res.ok) {
      const e = typeof body === 'object' && body !== null ? (body as { error?: { code?: unknown; message?: unknown } }).error : undefined;
      const code = typeof e?.code === 'string' ? e.code : `http_${res.status}`;
      const message = typeof e?.message === 'string' ? e.message : `HTTP ${res.status}`;
      throw new ApiError(res.status, code, message);
    }
    // list answers carry the store's time (`serverTime`)
    const isStr = (x: unknown): x is string => typeof x === 'string';
    const serverTime = field(body, 'serverTime', isStr);
    if (serverTime) syncClock(serverTime, performance.now() - started);
    return body;
  }

  private async incidents(status: 'active' | 'acknowledged'): Promise<{ incidents: IncidentWithDeliveries[]; readAt: string }> {
    const body = await this.request('GET', `/v1/admin/incidents?status=${status}&limit=500`);
    const incidents = field(body, 'incidents', isList(isIncidentWithDeliveries));
    const readAt = field(body, 'serverTime', (x): x is string => typeof x === 'string');
    if (!incidents || !readAt) throw new ApiError(200, 'unexpected', 'The server answered with an unexpected incident list.');
    return { incidents, readAt };
  }

  /**
   * Every open incident (active and acknowledged). `cursorMs` is the store's time just
   * before the earlier of the two reads: anything that changed later may be missing.
   */
  async openIncidents(): Promise<{ incidents: IncidentWithDeliveries[]; cursorMs: number }> {
    const [a, b] = await Promise.all([this.incidents('active'), this.incidents('acknowledged')]);
    const byId = new Map<string, IncidentWithDeliveries>();
    for (const i of [...a.incidents, ...b.incidents]) byId.set(i.id, i);
    return { incidents: [...byId.values()], cursorMs: Math.min(Date.parse(a.readAt), Date.parse(b.readAt)) - 1 };
  }

  async incident(id: string): Promise<IncidentWithDeliveries> {
    const i = field(await this.request('GET', `/v1/admin/incidents/${encodeURIComponent(id)}`), 'incident', isIncidentWithDeliveries);
    if (!i) throw new ApiError(200, 'unexpected', 'The server answered with an unexpected incident.');
    return i;
  }

  async command(id: string, what: 'ack' | 'resolve'): Promise<IncidentWithDeliveries> {
    const i = field(
      await this.request('POST', `/v1/admin/incidents/${encodeURIComponent(id)}/${what}`),
      'incident',
      isIncidentWithDeliveries,
    );
    if (!i) throw new ApiError(200, 'unexpected', 'The server answered with an unexpected incident.');
    return i;
  }

  /** The location trail of an open incident (empty once it is closed). */
  async trail(incidentId: string): Promise<Fix[]> {
    const fixes = field(
      await this.request('GET', `/v1/admin/incidents/${encodeURIComponent(incidentId)}/locations`),
      'fixes',
      isList(isFix),
    );
    if (!fixes) throw new ApiError(200, 'unexpected', 'The server answered with an unexpected location trail.');
    return fixes;
  }

  async timers(userId: string): Promise<Timer[]> {
    const body = await this.request('GET', `/v1/admin/users/${encodeURIComponent(userId)}/timers?limit=50`);
    const timers = field(body, 'timers', isList(isTimer));
    if (!timers) throw new ApiError(200, 'unexpected', 'The server answered with an unexpected timer list.');
    return timers;
  }
}
