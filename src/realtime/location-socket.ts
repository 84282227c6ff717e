/**
 * The `location.fix` socket message: the same as `POST /v1/timers/:id/location`, for an app
 * that keeps its socket open. Payload `{ timerId, lat, lng, accuracyM?, at? }`; the ack is
 * `{ ok: true, kept, reason?, fix, incidentId? }` or `{ ok: false, error: { code, message, details? } }`.
 *
 * Each socket has a budget of its own (LOCATION_MAX_PER_MINUTE messages a minute), charged
 * before the message is parsed: a socket that floods is answered `rate_limited` from memory,
 * never reaching the per-person budget of the service, let alone the store.
 */
import type { Logger } from 'pino';
import type { Server } from 'socket.io';
import { z } from 'zod';
import type { LocationCounters, LocationService } from '../app/location.js';
import { DomainError, RateLimited } from '../domain/errors.js';
import { rateDecision } from '../domain/location.js';
import { FixBody, postView } from '../wire/location.js';

const FixMessage = FixBody.extend({ timerId: z.string().min(1).max(200) });

type Ack = (reply: unknown) => void;

export interface LocationMessageSettings {
  /** messages one socket may send a minute (LOCATION_MAX_PER_MINUTE, the per-person budget) */
  perMinute: number;
  /** counts the messages refused here (`rate_limited`), as the service counts its own */
  counters?: Pick<LocationCounters, 'inc'>;
  /** this host's monotonic clock (ms) */
  now?: () => number;
}

const errorReply = (err: DomainError) => ({
  ok: false,
  error: { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) },
});

/** A sliding minute of one socket's messages: refuses (with the wait) once `perMinute` were sent. */
function socketBudget(perMinute: number, now: () => number): () => DomainError | undefined {
  let sent: number[] = [];
  return () => {
    const t = now();
    sent = sent.filter((s) => t - s < 60_000);
    const d = rateDecision({ perMinute, minIntervalMs: 0 }, t, sent, undefined);
    if (!d.ok) {
      const seconds = Math.max(1, Math.ceil(d.retryAfterMs / 1000));
      return RateLimited('rate_limited', `too many location fixes on this connection; try again in ${seconds} s`, seconds);
    }
    sent.push(t);
    return undefined;
  };
}

export function attachLocationMessages(
  io: Server,
  location: Pick<LocationService, 'post'>,
  log: Pick<Logger, 'error'>,
  settings: LocationMessageSettings,
): void {
  const now = settings.now ?? (() => performance.now());
  io.on('connection', (socket) => {
    const p = socket.data.principal as { userId: string; name?: string };
    const spend = socketBudget(settings.perMinute, now);
    socket.on('location.fix', async (msg: unknown, ack?: unknown) => {
      const reply: Ack = typeof ack === 'function' ? (ack as Ack) : () => {};
      const refused = spend();
      if (refused) {
        settings.counters?.inc('rate_limited');
        reply(errorReply(refused));
        return;
      }
      const parsed = FixMessage.safeParse(msg ?? {});
      if (!parsed.success) {
        reply({
          ok: false,
          error: {
            code: 'validation_failed',
            message: 'the location.fix message is not valid',
            details: { issues: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) },
          },
        });
        return;
      }
      const m = parsed.data;
      try {
        const out = await location.post({ userId: p.userId, displayName: p.name }, m.timerId, {
          lat: m.lat,
          lng: m.lng,
          accuracyM: m.accuracyM,
          at: m.at === undefined ? undefined : new Date(m.at),
        });
        reply({ ok: true, ...postView(out) });
      } catch (err) {
        if (err instanceof DomainError) {
          reply(errorReply(err));
          return;
        }
        log.error({ err }, 'location.fix failed');
        reply({ ok: false, error: { code: 'internal', message: 'something went wrong on our side' } });
      }
    });
  });
}
