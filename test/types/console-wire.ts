/**
 * The console's types (src/console/client/types.ts) against the server's wire shapes
 * (src/wire): the console is compiled on its own (browser code, no bundler), so it cannot
 * import src/wire; instead this file, part of `npm run typecheck`, fails to compile when the
 * two drift. Both ways: everything the server sends fits the console's type, and the console
 * names no field the server does not send (a renamed or dropped field is a compile error).
 */
import type * as Console from '../../src/console/client/types.js';
import type { fixView } from '../../src/wire/location.js';
import type { deliveryView, incidentView, timerView } from '../../src/wire/views.js';

type Wire<F extends (...args: never[]) => unknown> = NonNullable<ReturnType<F>>;
/** compiles only when T is exactly `true` */
type Assert<T extends true> = T;
type Fits<From, To> = [From] extends [To] ? true : false;
type NoExtra<Mine, Theirs> = [Exclude<keyof Mine, keyof Theirs>] extends [never] ? true : false;

export type Checks = [
  Assert<Fits<Wire<typeof timerView>, Console.Timer>>,
  Assert<NoExtra<Console.Timer, Wire<typeof timerView>>>,
  Assert<Fits<Wire<typeof incidentView>, Console.Incident>>,
  Assert<NoExtra<Console.Incident, Wire<typeof incidentView>>>,
  Assert<Fits<Wire<typeof deliveryView>, Console.Delivery>>,
  Assert<NoExtra<Console.Delivery, Wire<typeof deliveryView>>>,
  Assert<Fits<Wire<typeof fixView>, Console.Fix>>,
  Assert<NoExtra<Console.Fix, Wire<typeof fixView>>>,
];
