/** The names of the templates every language has (./templates/, one file per language). */
export const TEMPLATE_NAMES = [
  'sos',
  'panic',
  'moved',
  'allClear',
  'closed',
  'enrolment',
  'lastSeen',
  'lastKnown',
  'noLocation',
  'ageNow',
  'ageMinutes',
  'ageHours',
  'someone',
  'theUser',
  'theUserLower',
] as const;
export type TemplateName = (typeof TEMPLATE_NAMES)[number];
export type TemplateSet = Readonly<Record<TemplateName, string>>;
