/**
 * Re-keying contact ids on the SQLite store (the port: ../port-contact-ids.ts; SQL in
 * ./contact-ids-statements.ts). The whole re-key is one write of the WriteGate, i.e. one
 * transaction: a crash at any step leaves the ids as they were, and the next start does it all
 * again. It runs when the service opens the store, before anything else writes.
 */
import { needsRekey, rekeyMap, type ContactIdKey, type StoredContactId } from '../../domain/contact.js';
import { deliveryKey, type DeliveryKind } from '../../domain/delivery.js';
import type { RekeyResult, RekeyStep } from '../port-contact-ids.js';
import { write, type Ctx } from './ctx.js';

export const rekeyContactIds = write((c, key: ContactIdKey, onStep?: (s: RekeyStep) => void): RekeyResult =>
  // a transaction of its own: a throw at any step (a crash) rolls the whole re-key back
  c.db.transaction(() => rekey(c, key, onStep)).immediate(),
);

function rekey(c: Ctx, key: ContactIdKey, onStep?: (s: RekeyStep) => void): RekeyResult {
  const from = (c.st.keyingScheme.get() as { scheme: string }).scheme;
  const done: RekeyResult = { from, to: key.fingerprint, people: 0, contacts: 0, deliveries: 0, audit: 0 };
  if (!needsRekey(from, key)) return done;
  const rows = c.st.rekeyStoredIds.all() as { user_id: string; id: string; phone: string | null }[];
  const byUser = new Map<string, StoredContactId[]>();
  for (const r of rows) {
    const list = byUser.get(r.user_id) ?? [];
    list.push({ id: r.id, ...(r.phone === null ? {} : { phone: r.phone }) });
    byUser.set(r.user_id, list);
  }
  for (const [userId, stored] of byUser) {
    const map = rekeyMap(userId, stored, key);
    onStep?.({ step: 'mapped', userId, ids: map.size });
    for (const [oldId, newId] of map) {
      done.contacts += c.st.rekeyContact.run({ userId, from: oldId, to: newId }).changes;
      const deliveries = c.st.rekeyDeliveriesOf.all({ userId, from: oldId }) as { key: string; incident_id: string; kind: DeliveryKind }[];
      for (const d of deliveries) {
        const newKey = deliveryKey(d.incident_id, newId, d.kind);
        done.audit += c.st.rekeyAudit.run({ oldKey: d.key, newKey }).changes;
        done.deliveries += c.st.rekeyDelivery.run({ oldKey: d.key, newKey, from: oldId, to: newId }).changes;
        onStep?.({ step: 'delivery', userId });
      }
    }
    done.people++;
    onStep?.({ step: 'person', userId });
  }
  c.st.keyingSet.run(key.fingerprint);
  return done;
}
