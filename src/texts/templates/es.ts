/**
 * Spanish texts (ICU MessageFormat, rendered by ../render.ts). Written in the GSM-7 alphabet,
 * as Spanish SMS usually are: é, ñ, ü, ¿ and ¡ are GSM-7, but á, í, ó and ú are not, and one of
 * them would make the carrier send the whole text in UCS-2 (67 characters a segment instead of
 * 153), so they are written without the accent. No apostrophes (ICU quoting).
 */
import type { TemplateSet } from '../template-set.js';

export const es = {
  sos:
    'SOS de Vigil: {who} no ha confirmado que esta bien{hasPlace, select, yes { en {place}} other {}}' +
    '{hasMeeting, select, yes { (con {meeting})} other {}}. Su plazo vencio el {time}. {where} ' +
    'Llamele; si no contesta, llame a emergencias.{hasRef, select, yes { Ref {ref}} other {}}',
  panic:
    'SOS de Vigil: {who} pulso el boton de panico{hasPlace, select, yes { en {place}} other {}} el {time}. {where}' +
    '{hasNote, select, yes { Su nota: "{note}"} other {}} Llamele; si no contesta, llame a emergencias.' +
    '{hasRef, select, yes { Ref {ref}} other {}}',
  moved:
    'Vigil: {who} se ha movido desde la alerta SOS y sigue sin confirmar que esta bien. {where} Intente contactarle ahora.' +
    '{hasRef, select, yes { Ref {ref}} other {}}',
  allClear: 'Vigil: {who} ha confirmado que esta bien. Puede ignorar la alerta SOS anterior.{hasRef, select, yes { Ref {ref}} other {}}',
  closed:
    'Vigil: el equipo de seguridad de Vigil ha cerrado la alerta SOS de {who}. Si aun le preocupa, intente contactarle.' +
    '{hasRef, select, yes { Ref {ref}} other {}}',
  enrolment:
    'Vigil: {who} le ha añadido como contacto de emergencia. Si no confirma que esta bien tras una cita, le avisaremos por SMS ' +
    'de donde estaba. Responda YES para aceptar o STOP para rechazar.',
  lastSeen: 'Visto {age} en {link}',
  lastKnown: 'Ultima ubicacion conocida: {link}',
  noLocation: 'No compartio su ubicacion.',
  ageNow: 'ahora mismo',
  ageMinutes: 'hace {minutes} min',
  ageHours: 'hace {hours, plural, other {# h}}{minutes, plural, =0 {} other { # min}}',
  someone: 'Un usuario de Vigil',
  theUser: 'El usuario de Vigil',
  theUserLower: 'un usuario de Vigil',
} as const satisfies TemplateSet;
