/**
 * A real store with hooks in front of chosen methods: each hook runs (and may wait)
 * before the real call. Slows a store down, or holds a call until the test lets it go,
 * without touching the adapter.
 */
import type { Store } from '../../src/store/port.js';

export type StoreHooks = { [K in keyof Store]?: () => Promise<void> };

export function hookedStore(inner: Store, hooks: StoreHooks): Store {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => unknown;
      const hook = hooks[prop as keyof Store];
      if (!hook) return fn.bind(target);
      return async (...args: unknown[]) => {
        await hook();
        return fn.apply(target, args);
      };
    },
  });
}

/** A gate a hook can wait on: `wait()` resolves once `open()` was called. */
export function gate(): { wait: () => Promise<void>; open: () => void; reached: Promise<void> } {
  let open!: () => void;
  let reachedResolve!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  const reached = new Promise<void>((r) => (reachedResolve = r));
  return {
    wait: () => {
      reachedResolve();
      return opened;
    },
    open,
    reached,
  };
}
