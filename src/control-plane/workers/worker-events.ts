/**
 * Worker state changes in the organization change feed (`worker.state_changed`), written in the
 * transaction that moved the state, so a subscriber learns of every provisioning, healthy, failed,
 * unreachable and stopped Worker with its reason, on whichever instance moved it.
 * @module
 */
import type { Kysely, Transaction } from 'kysely'
import type { Deps } from '../deps.ts'
import { appendChange } from '../events/change-feed.ts'
import type { ControlPlaneDb } from '../schema.ts'

/** The columns an update returns for {@link announceWorkerStates}. */
export const WORKER_STATE_COLUMNS = ['id', 'org_id', 'state', 'state_reason'] as const

/** Appends one `worker.state_changed` per Worker row an update moved. */
export async function announceWorkerStates(
  deps: Pick<Deps, 'now' | 'notifier'>,
  trx: Kysely<ControlPlaneDb> | Transaction<ControlPlaneDb>,
  rows: ReadonlyArray<{ id: string; org_id: string; state: string; state_reason: string | null }>,
): Promise<void> {
  for (const row of rows) {
    await appendChange(deps, trx, {
      orgId: row.org_id,
      kind: 'worker.state_changed',
      subject: { type: 'worker', id: row.id },
      data: { state: row.state, reason: row.state_reason },
    })
  }
}
