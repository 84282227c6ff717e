import { Invalid } from './errors.js';

/** Bounds of a timer, validated once from configuration. */
export interface TimerLimits {
  minSeconds: number;
  maxSeconds: number;
  /** cap on how many times one timer may be extended */
  maxExtensions: number;
  /** cap on the whole span from start to deadline, extensions included */
  maxTotalSeconds: number;
}

export function makeLimits(input: TimerLimits): TimerLimits {
  const { minSeconds, maxSeconds, maxExtensions, maxTotalSeconds } = input;
  if (!Number.isInteger(minSeconds) || minSeconds < 1) throw new Error('minSeconds must be an integer >= 1');
  if (!Number.isInteger(maxSeconds) || maxSeconds < minSeconds) throw new Error('maxSeconds must be an integer >= minSeconds');
  if (!Number.isInteger(maxExtensions) || maxExtensions < 0) throw new Error('maxExtensions must be an integer >= 0');
  if (!Number.isInteger(maxTotalSeconds) || maxTotalSeconds < maxSeconds)
    throw new Error('maxTotalSeconds must be an integer >= maxSeconds');
  return { ...input };
}

export function checkDuration(limits: TimerLimits, seconds: number, field: string): void {
  if (!Number.isInteger(seconds) || seconds < limits.minSeconds || seconds > limits.maxSeconds) {
    throw Invalid('out_of_range', `${field} must be an integer between ${limits.minSeconds} and ${limits.maxSeconds}`, {
      field,
      min: limits.minSeconds,
      max: limits.maxSeconds,
    });
  }
}
