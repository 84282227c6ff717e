/**
 * Is a shared secret (JWT_SECRET) fit to sign tokens that make their bearer a moderator?
 * Refuses the placeholders people copy from templates and strings with little entropy. A
 * generated secret (`openssl rand -hex 32`, or 32 random bytes in base64) always passes;
 * test/unit/secret-strength.test.ts checks that on many of them.
 */

/** Exact values seen in templates and tutorials (compared without case). */
export const KNOWN_PLACEHOLDERS: readonly string[] = [
  'REPLACE_ME_with_at_least_32_random_characters', // k8s/secret.example.yaml
  'your-256-bit-secret', // jwt.io's example
  'changeme',
  'secret',
  'secretkey',
  'supersecret',
  'jwt-secret',
];

/**
 * Words that mark a placeholder or a phrase. Six letters or more (five for "dummy"), so that
 * a random base64 secret contains one by chance about once in a million.
 */
const PLACEHOLDER_WORDS = [
  'replace',
  'change',
  'example',
  'placeholder',
  'secret',
  'password',
  'passwd',
  'default',
  'insecure',
  'sample',
  'dummy',
];

/**
 * Bits of entropy estimated from how often each character occurs (Shannon), times the length.
 * An upper bound for text with structure; a floor against repetition. 32 random bytes in hex
 * or base64 estimate above 180; 16 random bytes in hex above 90.
 */
export const MIN_SECRET_BITS = 80;

export function estimatedBits(s: string): number {
  const chars = [...s];
  const counts = new Map<string, number>();
  for (const c of chars) counts.set(c, (counts.get(c) ?? 0) + 1);
  let perChar = 0;
  for (const n of counts.values()) perChar -= (n / chars.length) * Math.log2(n / chars.length);
  return perChar * chars.length;
}

/** One short piece repeated (`abcabcabc…`, `passwordpassword…`). */
function isRepetition(s: string): boolean {
  for (let period = 1; period <= s.length / 2; period++) {
    let repeats = true;
    for (let i = period; i < s.length && repeats; i++) repeats = s[i] === s[i - period];
    if (repeats) return true;
  }
  return false;
}

/** Eight or more consecutive characters counting up or down (`12345678`, `abcdefgh`, `hgfedcba`). */
function hasSequence(s: string, length = 8): boolean {
  for (const step of [1, -1]) {
    let run = 1;
    for (let i = 1; i < s.length; i++) {
      run = s.charCodeAt(i) - s.charCodeAt(i - 1) === step ? run + 1 : 1;
      if (run >= length) return true;
    }
  }
  return false;
}

/** Why `secret` must not sign tokens, or undefined when it may. Never quotes the secret. */
export function secretWeakness(secret: string): string | undefined {
  const lower = secret.toLowerCase();
  if (KNOWN_PLACEHOLDERS.some((p) => p.toLowerCase() === lower))
    return lower === KNOWN_PLACEHOLDERS[0]?.toLowerCase()
      ? 'is the placeholder of k8s/secret.example.yaml'
      : 'is a well-known example value';
  const word = PLACEHOLDER_WORDS.find((w) => lower.includes(w));
  if (word) return `contains "${word}": a placeholder or a phrase, not a random secret`;
  if (isRepetition(secret)) return 'is one short piece repeated';
  if (hasSequence(secret)) return 'contains a run of consecutive characters (like 12345678 or abcdefgh)';
  const bits = estimatedBits(secret);
  if (bits < MIN_SECRET_BITS)
    return `has too little entropy (about ${Math.floor(bits)} bits by character frequency; at least ${MIN_SECRET_BITS})`;
  return undefined;
}

/** The advice every refusal ends with. */
export const GENERATE_SECRET = 'generate one with `openssl rand -hex 32`';
