/** Bounded waits for tests: a promise that never settles fails the test with a message instead of hanging it. */

/** `p`, or a rejection naming `what` once `ms` pass without it settling (`p` itself goes on). */
export async function withinMs<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
