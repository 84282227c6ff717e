/**
 * The `location.fix` socket message: the same as `POST /v1/timers/:id/location`, for an app
 * that keeps its socket open. Payload `{ timerId, lat, lng, accuracyM?, at? }`; the ack is
 * `{ ok: true, kept, reason?, fix, incidentId? }` or `{ ok: false, error: { code, message, details? } }`.
 */
import type { Logger } from 'pino';
import type { Server } from 'socket.io';
import { z } from 'zod';
import type { LocationService } from '../app/location.js';
import { DomainError } from '../domain/errors.js';
import { FixBody, postView } from '../wire/location.js';

const FixMessage = FixBody.extend({ timerId: z.string().min(1).max(200) });

type Ack = (reply: unknown) => void;

export function attachLocationMessages(io: Server, location: Pick<LocationService, 'post'>, log: Pick<Logger, 'error'>): void {
  io.on('connection', (socket) => {
    const p = socket.data.principal as { userId: string; name?: string };
    socket.on('location.fix', async (msg: unknown, ack?: unknown) => {
      const reply: Ack = typeof ack === 'function' ? (ack as Ack) : () => {};
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
          reply({ ok: false, error: { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) } });
          return;
        }
        log.error({ err }, 'location.fix failed');
        reply({ ok: false, error: { code: 'internal', message: 'something went wrong on our side' } });
      }
    });
  });
}
