/**
 * The person's inbox: recording a fact once (keyed), pushing `notification.created` to their
 * sockets, and the REST reads. Only the owner sees theirs: every read and write is scoped by userId.
 */
import { Invalid, NotFound } from '../domain/errors.js';
import type { InboxPosition, NewNotification, Notification } from '../domain/notification.js';
import { PAGE_SIZE } from '../domain/paging.js';
import { notificationEvent, type EventPublisher } from '../realtime/events.js';
import type { Store } from '../store/port.js';
import { GroupCommit } from './group-commit.js';

/** Opaque cursor of the inbox: where the last page stopped (newest first). */
export function encodeInboxCursor(p: InboxPosition): string {
  return Buffer.from(JSON.stringify([p.createdAt.getTime(), p.id])).toString('base64url');
}

export function decodeInboxCursor(raw: string): InboxPosition {
  try {
    const v: unknown = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string')
      return { createdAt: new Date(v[0] as number), id: v[1] };
  } catch {
    // fall through: not a cursor we issued
  }
  throw Invalid('invalid_cursor', 'cursor is not one this API issued');
}

type Written = { notification: Notification; created: boolean };

export class NotificationService {
  /** the facts recorded in one turn of the event loop share one write */
  private readonly writes: GroupCommit<NewNotification, Written>;
  /** facts nobody waits for, collected over `backgroundWindowMs`: a burst of sent SOS texts, one commit every window, not one a text */
  private readonly background: GroupCommit<NewNotification, Written>;

  constructor(
    private readonly store: Store,
    private readonly events: EventPublisher,
    /** how long a background fact waits for others to share its write (ms) */
    backgroundWindowMs = 50,
  ) {
    const write = (list: NewNotification[]) => store.addNotifications(list);
    this.writes = new GroupCommit(write);
    this.background = new GroupCommit(write, 200, backgroundWindowMs);
  }

  /** Record a fact unless already recorded; a new one is pushed to the person's sockets. */
  async record(n: NewNotification): Promise<Notification> {
    return this.announced(await this.writes.add(n));
  }

  /**
   * As record(), for a fact that nobody waits on (the dispatcher after a text went out): it
   * is written within `backgroundWindowMs`, together with the others of that window.
   */
  async recordInBackground(n: NewNotification): Promise<Notification> {
    return this.announced(await this.background.add(n));
  }

  private announced({ notification, created }: Written): Notification {
    if (created) this.announce(notification);
    return notification;
  }

  /** Push one the store already recorded (the warning claim writes its own). */
  announce(n: Notification): void {
    this.events.publish(notificationEvent(n));
  }

  async list(
    userId: string,
    q: { unread?: boolean; cursor?: string; limit?: number },
  ): Promise<{ items: Notification[]; cursor?: string; more: boolean }> {
    const limit = Math.min(q.limit ?? PAGE_SIZE, PAGE_SIZE);
    const before = q.cursor === undefined ? undefined : decodeInboxCursor(q.cursor);
    const page = await this.store.listNotifications(userId, { unread: q.unread, before, limit: limit + 1 });
    const items = page.slice(0, limit);
    const more = page.length > limit;
    const last = items.at(-1);
    return more && last ? { items, more, cursor: encodeInboxCursor(last) } : { items, more };
  }

  async read(userId: string, id: string): Promise<Notification> {
    const n = await this.store.markNotificationRead(userId, id);
    if (!n) throw NotFound('notification_not_found', `no notification ${id} for this user`);
    return n;
  }

  readAll(userId: string): Promise<number> {
    return this.store.markAllNotificationsRead(userId);
  }
}
