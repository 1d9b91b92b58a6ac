/**
 * The job that starts (or restarts) a Worker's runtime, and queueing it afresh. Its own module so
 * Worker records (workers.ts) and runtime ownership (runtime-ownership.ts), which both queue it,
 * import it from below instead of from each other.
 * @module
 */
import type { Transaction } from 'kysely'
import { isoAt } from '../deps.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { enqueueJob } from '../jobs/job-queue.ts'
import type { ControlPlaneDb } from '../schema.ts'

/** The job kind that starts (or restarts) a Worker's runtime. */
export const PROVISION_JOB = 'worker.provision'

/**
 * Cancels a Worker's open provisioning jobs and queues a new one for `generation`, in `trx`:
 * earlier attempts are superseded by this one (new tokens, a hand-over, a recovered runtime).
 */
export async function reprovisionIn(
  ctx: AsyncContext,
  trx: Transaction<ControlPlaneDb>,
  worker: { id: string; org_id: string },
  generation: number,
): Promise<void> {
  const now = isoAt(ctx.deps)
  await trx
    .updateTable('job')
    .set({ status: 'canceled', finished_at: now, updated_at: now, locked_by: null, lease_until: null })
    .where('subject_id', '=', worker.id)
    .where('kind', '=', PROVISION_JOB)
    .where('status', 'in', ['queued', 'running'])
    .execute()
  await enqueueJob(trx, ctx.deps.now(), {
    kind: PROVISION_JOB,
    orgId: worker.org_id,
    subjectId: worker.id,
    payload: { generation },
    maxAttempts: ctx.settings.workers.maxAttempts,
    deadlineMs: ctx.settings.workers.provisioningDeadlineMs,
  })
}
