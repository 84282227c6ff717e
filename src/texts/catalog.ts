/**
 * The templates of every text a contact gets, one file per language (./templates/). Each is an
 * ICU MessageFormat string; every language has every template (the type says so).
 */
import type { Language } from '../domain/locale.js';
import { en } from './templates/en.js';
import { es } from './templates/es.js';
import type { TemplateSet } from './template-set.js';

export { TEMPLATE_NAMES, type TemplateName, type TemplateSet } from './template-set.js';

export const CATALOG: Readonly<Record<Language, TemplateSet>> = { en, es };
