/**
 * The fixed numbers the composition root wires in: chosen by measurement or reasoning, not
 * something an operator needs to change (those are settings, in config.ts). One place, one
 * line of why each; the measurements: docs/architecture.md ("Why a burst stays on time"), docs/sms.md.
 */

/** A sweep starts at every deadline, many times a second under load; the repairs and warnings that are not per timer need not (Sweeper `onceEveryMs`). */
export const SWEEP_ONCE_EVERY_MS = 500;

/**
 * A deadline still unclaimed this long after it passed (plus GRACE_SECONDS) means some
 * replica's sweep is behind: on time a sweep claims it within a few ms and the goal is p99 ≤
 * 100 ms; 250 ms reacted only once the sweep was already late (SweepBacklog `behindMs`).
 */
export const SWEEP_BEHIND_MS = 40;

/** How often the dispatcher reads from the store whether the sweep is behind: 100 ms reacted too late to a burst (SweepBacklog `refreshMs`). */
export const SWEEP_BEHIND_READ_MS = 20;

/** Incidents first during a burst, but no text is held back longer than this (Dispatcher `yieldMaxMs`). */
export const TEXTS_HELD_MAX_MS = 5000;

/** A trail answer carries at most this many fixes, the latest: the recent path for the moderator's card, bounded so one answer stays small (LocationService `trailLimit`). */
export const TRAIL_LIMIT = 500;

/** At shutdown idle connections close at once; one still busy this long after is closed by force, so a slow client cannot hold the shutdown. */
export const HTTP_FORCE_CLOSE_MS = 2000;

/**
 * How often Node enforces the headers and request timeouts (default 30 s: a slow client would
 * hold its socket far past HTTP_HEADERS_TIMEOUT_MS): a quarter of the headers timeout, between
 * 100 ms and 1 s so the check is neither a busy loop nor late.
 */
export const httpTimeoutCheckMs = (headersTimeoutMs: number): number => Math.max(100, Math.min(1000, Math.floor(headersTimeoutMs / 4)));

/** A store check answers the `/readyz` of the next second too: probes come every few seconds, a flood of them costs one ping a second. */
export const READY_CACHE_MS = 1000;

/** Connections the METRICS_PORT listener keeps open at most: Prometheus (an HA pair, a debugging curl) needs a handful. */
export const METRICS_MAX_CONNECTIONS = 16;
