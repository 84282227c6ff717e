/**
 * The cues for a new SOS: a short two-tone beep (WebAudio, no sound file) that a
 * moderator can mute for this tab, and the count of active SOS in the tab title.
 */
const MUTE_KEY = 'vigil.console.muted';

export class Alarm {
  private ctx: AudioContext | undefined;
  muted: boolean;

  constructor(private readonly storage: Storage) {
    this.muted = storage.getItem(MUTE_KEY) === '1';
  }

  setMuted(muted: boolean): void {
    this.muted = muted;
    this.storage.setItem(MUTE_KEY, muted ? '1' : '0');
    if (!muted) this.unlock();
  }

  /** Browsers start audio only after a user gesture: call this from one (sign-in, unmute). */
  unlock(): void {
    try {
      this.ctx ??= new AudioContext();
      if (this.ctx.state === 'suspended') void this.ctx.resume();
    } catch {
      // no audio device: the visible cues remain
    }
  }

  beep(): void {
    if (this.muted) return;
    this.unlock();
    const ctx = this.ctx;
    if (!ctx) return;
    const t0 = ctx.currentTime + 0.02;
    for (const [i, freq] of [880, 660, 880].entries()) {
      const osc = ctx.createOscillator();
      const gain = ctx.createGain();
      osc.type = 'square';
      osc.frequency.value = freq;
      const start = t0 + i * 0.22;
      gain.gain.setValueAtTime(0.0001, start);
      gain.gain.exponentialRampToValueAtTime(0.15, start + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, start + 0.18);
      osc.connect(gain).connect(ctx.destination);
      osc.start(start);
      osc.stop(start + 0.2);
    }
  }

  close(): void {
    void this.ctx?.close().catch(() => undefined);
    this.ctx = undefined;
  }
}

export const titleFor = (active: number): string => (active > 0 ? `(${active}) SOS · Vigil console` : 'Vigil console');

export function setTitleCount(active: number): void {
  document.title = titleFor(active);
}
