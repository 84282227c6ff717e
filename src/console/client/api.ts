/** The REST calls the console makes, with the moderator's bearer token. */
import { syncClock } from './clock.js';
import {
  field,
  isAuditLine,
  isDelivery,
  isFix,
  isIncidentWithDeliveries,
  isNote,
  isTimer,
  type AuditLine,
  type Delivery,
  type Fix,
  type IncidentWithDeliveries,
  type Note,
  type Timer,
} from './types.js';

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

/** Incidents per batched trail read: the server takes at most 100 ids. */
const TRAILS_PER_REQUEST = 100;

const isTrail = (x: unknown): x is { incidentId: string; fixes: Fix[] } =>
  typeof field(x, 'incidentId', (v): v is string => typeof v === 'string') === 'string' && field(x, 'fixes', isList(isFix)) !== undefined;

export class Api {
  constructor(private readonly token: string) {}

  private async request(method: 'GET' | 'POST', path: string, body: unknown = {}, headers: Record<string, string> = {}): Promise<unknown> {
    const started = performance.now();
    let res: Response;
    try {
      res = await fetch(path, {
        method,
        headers: {
          Authorization: `Bearer ${this.token}`,
          Accept: 'application/json',
          ...(method === 'POST' ? { 'Content-Type': 'application/json' } : {}),
          ...headers,
        },
        body: method === 'POST' ? JSON.stringify(body) : undefined,
        cache: 'no-store',
        credentials: 'omit',
      });
    } catch (err) {
      throw new ApiError(0, 'network', `Vigil cannot be reached (${err instanceof Error ? err.message : String(err)}).`);
    }
    const answer: unknown = await res.json().catch(() => undefined);
    if (!res.ok) {
      const e =
        typeof answer === 'object' && answer !== null ? (answer as { error?: { code?: unknown; message?: unknown } }).error : undefined;
      const code = typeof e?.code === 'string' ? e.code : `http_${res.status}`;
      const message = typeof e?.message === 'string' ? e.message : `HTTP ${res.status}`;
      throw new ApiError(res.status, code, message);
    }
    // list answers carry the store's time (`serverTime`)
    const isStr = (x: unknown): x is string => typeof x === 'string';
    const serverTime = field(answer, 'serverTime', isStr);
    if (serverTime) syncClock(serverTime, performance.now() - started);
    return answer;
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

  /**
   * The trails of many incidents, by incident id: one request per TRAILS_PER_REQUEST of them
   * (the server's bound), so a reconnect with a full board costs a request or two, not one per card.
   */
  async trails(incidentIds: readonly string[]): Promise<Map<string, Fix[]>> {
    const out = new Map<string, Fix[]>();
    for (let i = 0; i < incidentIds.length; i += TRAILS_PER_REQUEST) {
      const ids = incidentIds.slice(i, i + TRAILS_PER_REQUEST);
      const body = await this.request('GET', `/v1/admin/incidents/locations?ids=${ids.map(encodeURIComponent).join(',')}`);
      const trails = field(body, 'trails', isList(isTrail));
      if (!trails) throw new ApiError(200, 'unexpected', 'The server answered with unexpected location trails.');
      for (const t of trails) out.set(t.incidentId, t.fixes);
    }
    return out;
  }

  /** Send a dead or failed text again. */
  async resend(key: string): Promise<Delivery> {
    const d = field(await this.request('POST', `/v1/admin/deliveries/${encodeURIComponent(key)}/resend`), 'delivery', isDelivery);
    if (!d) throw new ApiError(200, 'unexpected', 'The server answered with an unexpected delivery.');
    return d;
  }

  /** Cancel the incident's pending texts; answers the incident as it is now. */
  async cancelPending(id: string): Promise<IncidentWithDeliveries> {
    const path = `/v1/admin/incidents/${encodeURIComponent(id)}/deliveries/cancel`;
    const i = field(await this.request('POST', path), 'incident', isIncidentWithDeliveries);
    if (!i) throw new ApiError(200, 'unexpected', 'The server answered with an unexpected incident.');
    return i;
  }

  /** Add a note; `key` makes a retry of the same click add it once. */
  async addNote(id: string, text: string, key: string): Promise<Note> {
    const path = `/v1/admin/incidents/${encodeURIComponent(id)}/notes`;
    const n = field(await this.request('POST', path, { text }, { 'Idempotency-Key': key }), 'note', isNote);
    if (!n) throw new ApiError(200, 'unexpected', 'The server answered with an unexpected note.');
    return n;
  }

  /** A person's timers; `reason` is required while they have no open incident (recorded in the audit). */
  async timers(userId: string, reason?: string): Promise<Timer[]> {
    const why = reason ? `&reason=${encodeURIComponent(reason)}` : '';
    const body = await this.request('GET', `/v1/admin/users/${encodeURIComponent(userId)}/timers?limit=50${why}`);
    const timers = field(body, 'timers', isList(isTimer));
    if (!timers) throw new ApiError(200, 'unexpected', 'The server answered with an unexpected timer list.');
    return timers;
  }

  /** One page of the audit, newest first, filtered; `cursor` from the previous page for older lines. */
  async audit(
    filter: { actor?: string; person?: string; incident?: string },
    cursor?: string,
  ): Promise<{ lines: AuditLine[]; cursor?: string }> {
    const q = new URLSearchParams({ limit: '50' });
    for (const [k, v] of Object.entries(filter)) if (v) q.set(k, v);
    if (cursor) q.set('cursor', cursor);
    const body = await this.request('GET', `/v1/admin/audit?${q.toString()}`);
    const lines = field(body, 'audit', isList(isAuditLine));
    if (!lines) throw new ApiError(200, 'unexpected', 'The server answered with an unexpected audit page.');
    const next = field(body, 'cursor', (x): x is string => typeof x === 'string');
    return next ? { lines, cursor: next } : { lines };
  }
}
