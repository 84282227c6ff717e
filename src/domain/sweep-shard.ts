/**
 * Sweep shards: how the escalation of due timers is spread over replicas. Every timer has
 * a fixed slot (0 … SWEEP_SLOTS − 1), a hash of its id stored with it when it is armed;
 * with `of` shards, shard `index` is every timer whose slot modulo `of` is `index`. Each
 * shard has its own sweep lock, so up to `of` replicas escalate at once, each its own
 * timers. With one shard (the default) there is one lock and one sweeper, as before.
 * Timers stored before slots existed count as slot 0 (shard 0 sweeps them).
 */

/** Slots a timer can have; a shard count divides them nearly evenly up to 64. */
export const SWEEP_SLOTS = 1024;
/** The most shards a deployment may run (each is a lock try per sweep on every replica). */
export const MAX_SWEEP_SHARDS = 64;

export interface SweepShard {
  /** 0 … of − 1 */
  index: number;
  /** how many shards there are (1: one shard holds every timer) */
  of: number;
}

/** One shard holding every timer: the unsharded sweep. */
export const ALL_SHARDS: SweepShard = Object.freeze({ index: 0, of: 1 });

/** The timer's slot: 32-bit FNV-1a of its id, modulo SWEEP_SLOTS. Stable: stored once, never recomputed. */
export function sweepSlot(timerId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < timerId.length; i++) {
    h ^= timerId.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % SWEEP_SLOTS;
}

/** Is a timer of this slot in the shard? */
export function inShard(slot: number, shard: SweepShard): boolean {
  return shard.of <= 1 || slot % shard.of === shard.index;
}

/** Shard 0 keeps the configured lock name (one shard is exactly the unsharded sweep); shard k > 0 is `<name>:<k>`. */
export function shardLockName(lockName: string, shard: SweepShard): string {
  return shard.index === 0 ? lockName : `${lockName}:${shard.index}`;
}
