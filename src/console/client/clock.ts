/**
 * The server's clock as seen from the page: deadlines are decided by the store's clock,
 * so "time left" and "how long ago" use the offset measured from API answers.
 */
let offsetMs = 0;

/** `serverIso` was the server's time when it answered; the request took `rttMs`. */
export function syncClock(serverIso: string, rttMs: number): void {
  const server = Date.parse(serverIso);
  if (Number.isFinite(server)) offsetMs = server + rttMs / 2 - Date.now();
}

export const serverNow = (): number => Date.now() + offsetMs;
