/**
 * An EventPublisher that also reports the deadline of every timer armed or extended on this
 * replica, so the scheduler can wake at it (a deadline earlier than its planned wake-up).
 * Publishing is unchanged: every event goes on to `inner`.
 */
import type { EventPublisher, VigilEvent } from '../realtime/events.js';

const deadlineOf = (e: VigilEvent): Date | undefined => {
  if (e.name !== 'timer.armed' && e.name !== 'timer.extended') return undefined;
  const timer = e.payload.timer as { expiresAt?: unknown } | undefined;
  const at = typeof timer?.expiresAt === 'string' ? new Date(timer.expiresAt) : undefined;
  return at && !Number.isNaN(at.getTime()) ? at : undefined;
};

export function reportingDeadlines(inner: EventPublisher, onDeadline: (at: Date) => void): EventPublisher {
  return {
    publish(event) {
      inner.publish(event);
      const at = deadlineOf(event);
      if (at) onDeadline(at);
    },
  };
}
