/**
 * The location trail on an incident card: a small SVG sketch of the path (no map tiles,
 * nothing loaded from elsewhere) and the list of fixes with their times, newest first.
 */
import { clockTime, el, mapUrl } from './format.js';
import type { Fix } from './types.js';

const SVG = 'http://www.w3.org/2000/svg';
const W = 160;
const H = 90;
const PAD = 8;
const SHOWN = 8;

export class TrailView {
  readonly root = el('section', 'trail');
  private readonly sketch = document.createElementNS(SVG, 'svg');
  private readonly list = el('ol', 'trail__list');
  private readonly empty = el('p', 'muted', 'No live location shared since the SOS.');
  private fixes: Fix[] = [];

  constructor(titleId: string) {
    const title = el('h5', 'card__sub', 'Location trail');
    title.id = titleId;
    this.root.setAttribute('aria-labelledby', titleId);
    this.sketch.setAttribute('viewBox', `0 0 ${W} ${H}`);
    this.sketch.setAttribute('class', 'trail__sketch');
    this.sketch.setAttribute('role', 'img');
    this.root.append(title, this.empty, this.sketch, this.list);
    this.render();
  }

  set(fixes: Fix[]): void {
    this.fixes = [...fixes].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
    this.render();
  }

  add(fix: Fix): void {
    if (this.fixes.some((f) => f.at === fix.at)) return;
    this.set([...this.fixes, fix]);
  }

  get count(): number {
    return this.fixes.length;
  }

  private render(): void {
    const has = this.fixes.length > 0;
    this.empty.hidden = has;
    this.sketch.style.display = has ? '' : 'none';
    this.list.hidden = !has;
    if (!has) {
      this.list.replaceChildren();
      this.sketch.replaceChildren();
      return;
    }
    this.drawSketch();
    const newest = [...this.fixes].reverse().slice(0, SHOWN);
    this.list.replaceChildren(
      ...newest.map((f, i) => {
        const li = el('li', i === 0 ? 'trail__fix trail__fix--latest' : 'trail__fix');
        li.dataset.at = f.at;
        const a = el('a', undefined, `${f.lat.toFixed(5)}, ${f.lng.toFixed(5)}`);
        a.href = mapUrl(f.lat, f.lng);
        a.target = '_blank';
        a.rel = 'noopener noreferrer';
        a.append(el('span', 'sr-only', ' (map, opens in a new tab)'));
        const when = el('time', 'trail__time', clockTime(f.at));
        when.dateTime = f.at;
        li.append(when, ' ', a);
        if (f.accuracyM !== undefined) li.append(el('span', 'muted', ` ±${Math.round(f.accuracyM)} m`));
        if (i === 0) li.append(el('span', 'badge badge--latest', 'latest'));
        return li;
      }),
    );
    if (this.fixes.length > SHOWN) this.list.append(el('li', 'muted', `… and ${this.fixes.length - SHOWN} earlier`));
  }

  /** Equirectangular projection of the fixes into the box: a sketch of the movement, not a map. */
  private drawSketch(): void {
    const lats = this.fixes.map((f) => f.lat);
    const lngs = this.fixes.map((f) => f.lng * Math.cos((lats[0] ?? 0) * (Math.PI / 180)));
    const [minX, maxX, minY, maxY] = [Math.min(...lngs), Math.max(...lngs), Math.min(...lats), Math.max(...lats)];
    const span = Math.max(maxX - minX, maxY - minY, 1e-6);
    const sx = (x: number) => PAD + ((x - minX) / span) * (W - 2 * PAD);
    const sy = (y: number) => H - PAD - ((y - minY) / span) * (H - 2 * PAD);
    const pts = this.fixes.map((_, i) => `${sx(lngs[i] ?? 0).toFixed(1)},${sy(lats[i] ?? 0).toFixed(1)}`);
    const line = document.createElementNS(SVG, 'polyline');
    line.setAttribute('points', pts.join(' '));
    line.setAttribute('class', 'trail__line');
    const last = pts[pts.length - 1]?.split(',') ?? ['0', '0'];
    const dot = document.createElementNS(SVG, 'circle');
    dot.setAttribute('cx', last[0] ?? '0');
    dot.setAttribute('cy', last[1] ?? '0');
    dot.setAttribute('r', '4');
    dot.setAttribute('class', 'trail__dot');
    const label = document.createElementNS(SVG, 'title');
    label.textContent = `Path of ${this.fixes.length} location fix${this.fixes.length === 1 ? '' : 'es'}; the dot is the latest`;
    this.sketch.replaceChildren(label, line, dot);
  }
}
