/**
 * Replies from contacts (issue 37, item 2): which keyword a text is, and what Vigil answers. Pure.
 * The answers are fixed strings: nothing a sender wrote is ever put into an answer or another
 * text (an inbound body is untrusted and may be spoofed).
 */

/** `yes`: "I'm on it" (or confirming enrolment); `stop`/`start`/`help`: the carrier keywords; `other`: anything else. */
export type InboundKeyword = 'yes' | 'stop' | 'start' | 'help' | 'other';

const KEYWORDS: Readonly<Record<string, InboundKeyword>> = {
  YES: 'yes',
  OK: 'yes',
  '1': 'yes',
  // Twilio's default opt-out keywords
  STOP: 'stop',
  STOPALL: 'stop',
  UNSUBSCRIBE: 'stop',
  CANCEL: 'stop',
  END: 'stop',
  QUIT: 'stop',
  // Twilio's opt-in keywords (YES is ours: an acknowledgement)
  START: 'start',
  UNSTOP: 'start',
  HELP: 'help',
  INFO: 'help',
};

/** The keyword of a text: the whole body, trimmed, case-insensitive (a keyword inside a sentence is not one). */
export function keywordOf(body: string | undefined): InboundKeyword {
  const word = (body ?? '').trim().toUpperCase();
  return Object.hasOwn(KEYWORDS, word) ? (KEYWORDS[word] as InboundKeyword) : 'other';
}

/** One contact's "I'm on it" on an incident (not the moderator's `acknowledgedBy`). */
export interface ContactAck {
  contactId: string;
  /** the contact's name as the person saved it */
  name: string;
  at: Date;
  /** the carrier's id of the reply that acknowledged (a repeated webhook carries the same) */
  messageSid: string;
}

/** What a reply did; each has one fixed answer (`replyText`). */
export type InboundOutcome =
  | 'acknowledged'
  | 'already_acknowledged'
  | 'confirmed'
  | 'opted_out'
  | 'opted_in'
  | 'help'
  | 'unknown_sender'
  | 'no_incident'
  | 'not_understood';

export const INBOUND_OUTCOMES: readonly InboundOutcome[] = [
  'acknowledged',
  'already_acknowledged',
  'confirmed',
  'opted_out',
  'opted_in',
  'help',
  'unknown_sender',
  'no_incident',
  'not_understood',
];

const REPLIES: Readonly<Record<InboundOutcome, string | undefined>> = {
  acknowledged: 'Thank you. Vigil has told the moderators you are on it.',
  already_acknowledged: 'Thank you, your answer was already recorded.',
  confirmed: 'Thank you. You are now an emergency contact on Vigil. Reply STOP to stop texts, HELP for help.',
  // the carrier confirms an opt-out itself; a second text would be noise
  opted_out: undefined,
  opted_in: 'You will get Vigil emergency texts again. Reply YES to confirm you are a contact, STOP to stop.',
  help: 'Vigil sends emergency texts for someone who chose you as a contact. Reply YES to answer an alert, STOP to stop texts.',
  unknown_sender: 'This number only sends Vigil emergency texts. It cannot take messages.',
  no_incident: 'There is no open alert for you to answer. Reply HELP for help, STOP to stop texts.',
  not_understood: 'Reply YES to answer an alert, STOP to stop texts, HELP for help.',
};

/** The fixed answer to a reply that did `o`; undefined: answer nothing (an empty TwiML response). */
export const replyText = (o: InboundOutcome): string | undefined => REPLIES[o];

const XML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** The TwiML document answering a reply: one `<Message>` with the fixed text, or an empty `<Response/>`. */
export function twimlAnswer(text: string | undefined): string {
  const head = '<?xml version="1.0" encoding="UTF-8"?>';
  if (text === undefined) return `${head}<Response/>`;
  return `${head}<Response><Message>${text.replace(/[&<>"']/g, (c) => XML_ESCAPES[c] ?? c)}</Message></Response>`;
}
