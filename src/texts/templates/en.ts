/**
 * English texts (ICU MessageFormat, rendered by ../render.ts). Plain GSM-7 characters only, and
 * no apostrophes (ICU quoting): a text stays within two SMS segments (test/unit/texts.test.ts).
 * Flags are `yes`/`no`; names arrive already made plain (no links, no control characters).
 */
import type { TemplateSet } from '../template-set.js';

export const en = {
  sos:
    'SOS from Vigil: {who} did not check in{hasPlace, select, yes { at {place}} other {}}' +
    '{hasMeeting, select, yes { (meeting {meeting})} other {}}. Their timer ran out at {time}. {where} ' +
    'Call them; if no answer, call emergency services.{hasRef, select, yes { Ref {ref}} other {}}',
  panic:
    'SOS from Vigil: {who} pressed the panic button{hasPlace, select, yes { at {place}} other {}} at {time}. {where}' +
    '{hasNote, select, yes { Their note: "{note}"} other {}} Call them; if no answer, call emergency services.' +
    '{hasRef, select, yes { Ref {ref}} other {}}',
  moved:
    'Vigil update: {who} has moved since the SOS alert and has still not checked in. {where} Please try to reach them now.' +
    '{hasRef, select, yes { Ref {ref}} other {}}',
  allClear:
    'Vigil update: {who} has checked in and says they are safe. Please disregard the earlier SOS alert.' +
    '{hasRef, select, yes { Ref {ref}} other {}}',
  closed:
    'Vigil update: the SOS alert for {who} has been closed by the Vigil safety team. If you are still worried, try to reach them.' +
    '{hasRef, select, yes { Ref {ref}} other {}}',
  enrolment:
    'Vigil: {who} added you as an emergency contact. If they miss a safety check-in, we will text you where they were. ' +
    'Reply YES to confirm or STOP to refuse.',
  lastSeen: 'Last seen {age} at {link}',
  lastKnown: 'Last known location: {link}',
  noLocation: 'No location was shared.',
  ageNow: 'just now',
  ageMinutes: '{minutes} min ago',
  ageHours: '{hours, plural, other {# h}}{minutes, plural, =0 {} other { # min}} ago',
  someone: 'A Vigil user',
  theUser: 'The Vigil user',
  theUserLower: 'the Vigil user',
} as const satisfies TemplateSet;
