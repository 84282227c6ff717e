/** Request budgets no ordinary test reaches (test/integration/rate-limits.test.ts sets its own). */
export const GENEROUS_LIMITS: Record<string, string> = {
  RATE_LIMIT_PER_PERSON: '1000000',
  RATE_LIMIT_CHECKINS_PER_PERSON: '1000000',
  RATE_LIMIT_PER_IP: '1000000',
  SOCKETS_PER_USER: '1000',
};
