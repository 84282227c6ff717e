/** What moderators did, and what the retention job anonymised. */
import type client from 'prom-client';
import { RETENTION_KINDS } from '../domain/moderation.js';
import { labelledCounter } from './labelled.js';

export function moderationMetrics(r: client.Registry[]) {
  return {
    moderatorActions: labelledCounter({
      name: 'vigil_moderator_actions_total',
      help: 'Moderator actions on texts that changed something (resend, cancel: per delivery, note)',
      labels: { action: ['resend', 'cancel', 'note'] },
      registers: r,
    }),
    retentionRecords: labelledCounter({
      name: 'vigil_retention_records_total',
      help: 'Records anonymised by the retention job, by kind (fixes: location fixes deleted)',
      labels: { kind: RETENTION_KINDS },
      registers: r,
    }),
    retentionRuns: labelledCounter({
      name: 'vigil_retention_runs_total',
      help: 'Retention job runs by outcome (more_left: the batch bound was reached, the next run goes on)',
      labels: { outcome: ['done', 'more_left', 'contended', 'lost_lease', 'off'] },
      registers: r,
    }),
  };
}
