/**
 * A clock for stores that take one (`clock: () => number`): real time plus an offset that
 * tests move forward instead of waiting. The offset lives in shared memory, so stores in
 * worker threads opened on the same buffer read the same time.
 */
export class SharedClock {
  private readonly offset: BigInt64Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(8)) {
    this.offset = new BigInt64Array(buffer);
  }

  readonly now = (): number => Date.now() + Number(Atomics.load(this.offset, 0));

  /** Move the clock forward until it is strictly after `t` (never backwards). */
  passTime(t: Date): void {
    const ahead = t.getTime() - this.now() + 1;
    if (ahead > 0) Atomics.add(this.offset, 0, BigInt(ahead));
  }
}
