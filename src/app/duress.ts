/**
 * The duress code (docs/security.md, "Duress code"): a person sets a duress PIN; "I'm safe" or
 * cancel sent with it answers exactly as a genuine one does, and opens a silent SOS: moderators
 * are paged at once, the contacts texted (DURESS_TEXT_CONTACTS), and nothing the phone reads
 * shows it. The PIN is kept as a slow hash only (scrypt, a salt per person), compared in
 * constant time; a check-in that carries a PIN costs one scrypt whether or not the person has
 * set one, so the time of the answer does not tell whether a PIN is a duress PIN.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import type { DuressSecret, DuressStore } from '../store/port-duress.js';
import type { PanicService } from './panic.js';
import type { Caller, CommandResult, TimerService } from './timers.js';
import type { IdempotencyClaim } from '../store/port.js';

/** scrypt's cost (N) for new PINs: about 50 ms of one core, 16 MiB. */
export const DURESS_SCRYPT_COST = 16384;
const KEY_BYTES = 32;
const SALT_BYTES = 16;

export function hashPin(pin: string, salt: Buffer, cost: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(pin.normalize('NFKC'), salt, KEY_BYTES, { N: cost, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

/** The slow hash: scrypt (a test passes its own to count the work). */
export type PinHash = (pin: string, salt: Buffer, cost: number) => Promise<Buffer>;

export class DuressPins {
  /** hashed against when the person has no PIN: the same work, never a match */
  private readonly decoy: DuressSecret;

  constructor(
    private readonly store: DuressStore,
    private readonly cost = DURESS_SCRYPT_COST,
    private readonly hash: PinHash = hashPin,
  ) {
    this.decoy = { salt: randomBytes(SALT_BYTES).toString('base64'), hash: randomBytes(KEY_BYTES).toString('base64'), cost };
  }

  async set(userId: string, pin: string): Promise<void> {
    const salt = randomBytes(SALT_BYTES);
    const hash = await this.hash(pin, salt, this.cost);
    await this.store.setDuressPin(userId, { salt: salt.toString('base64'), hash: hash.toString('base64'), cost: this.cost });
  }

  /** Whether there was one. */
  remove(userId: string): Promise<boolean> {
    return this.store.deleteDuressPin(userId);
  }

  /** Whether `pin` is the person's duress PIN: one scrypt and a constant-time compare whether or not they set one. */
  async matches(userId: string, pin: string): Promise<boolean> {
    const stored = await this.store.getDuressPin(userId);
    const s = stored ?? this.decoy;
    const got = await this.hash(pin, Buffer.from(s.salt, 'base64'), s.cost);
    const want = Buffer.from(s.hash, 'base64');
    const same = got.length === want.length && timingSafeEqual(got, want);
    return stored !== null && same;
  }
}

/** "I'm safe" and cancel that may carry a PIN. */
export class DuressCheckIns {
  constructor(
    private readonly pins: DuressPins,
    private readonly timers: TimerService,
    private readonly panic: PanicService,
    /** a silent SOS the check-in recorded as owed but could not open (the sweep's repair will) */
    private readonly onOwed: (err: unknown, timerId: string) => void = () => undefined,
  ) {}

  async resolve(
    caller: Caller,
    id: string,
    command: 'safe' | 'cancel',
    pin: string | undefined,
    idem?: IdempotencyClaim,
  ): Promise<CommandResult> {
    const duress = pin !== undefined && (await this.pins.matches(caller.userId, pin));
    if (!duress) return command === 'safe' ? this.timers.checkIn(caller, id, idem) : this.timers.cancel(caller, id, idem);
    return this.timers.resolveUnderDuress(caller, id, command, idem, async (timer) => {
      try {
        await this.panic.raiseDuress(caller, timer);
      } catch (err) {
        // recorded as owed by the check-in's own write: the sweep opens it, and the answer stays the genuine one
        if (!timer.duressPending) throw err;
        this.onOwed(err, timer.id);
      }
    });
  }
}
