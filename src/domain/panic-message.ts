/** The SOS text of a panic button press. Pure; the same limits and name rules as ./messages.ts. */
import { clip, MAX_SMS_CHARS, plainName, sosOpening, type LastSeen } from './messages.js';
import type { GeoPoint } from './timer.js';

export interface PanicFacts {
  personName?: string;
  locationName?: string;
  location?: GeoPoint;
  /** the freshest live fix, when the press carried no place: said as "Last seen 2 min ago at …" */
  lastSeen?: LastSeen;
  raisedAt: Date;
  /** a short line from the person (shortened, names rules applied) */
  note?: string;
}

export function panicMessage(f: PanicFacts): string {
  const { who, where, map, when } = sosOpening(f, f.raisedAt);
  const note = plainName(f.note ?? '');
  const said = note ? ` Their note: "${clip(note, 100)}"` : '';
  const body = `SOS from Vigil: ${who} pressed the panic button${where} at ${when} UTC.${map}${said} Please try to reach them now; call local emergency services if you cannot.`;
  return clip(body, MAX_SMS_CHARS);
}
