/**
 * A provisioner's report that the runtimes it holds cannot be reached through their engine (or
 * can again): their Workers turn `unreachable` with the provisioner's reason (such as
 * `engine_unreachable`) while it lasts, and `healthy` again once the engine answers and the
 * runtime still runs. Only Workers this instance owns move, each with a conditional update.
 * @module
 */
import { isoAt } from '../deps.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { shortMessage } from '../jobs/job-queue.ts'
import { announceWorkerStates, WORKER_STATE_COLUMNS } from './worker-events.ts'

/** Applies one report (`problem` null = resolved). */
export async function recordRuntimeState(
  ctx: AsyncContext,
  workerIds: string[],
  problem: { reason: string; message: string } | null,
): Promise<void> {
  if (workerIds.length === 0) return
  await ctx.deps.db.transaction().execute(async (trx) => {
    const now = isoAt(ctx.deps)
    const base = trx
      .updateTable('worker')
      .where('id', 'in', workerIds)
      .where('runtime_instance_id', '=', ctx.instance.id)
    const moved = problem
      ? await base
          .set({
            state: 'unreachable',
            state_reason: problem.reason,
            state_message: shortMessage(problem.message),
            last_error_reason: problem.reason,
            last_error_message: shortMessage(problem.message),
            last_error_at: now,
            updated_at: now,
          })
          .where('state', '=', 'healthy')
          .returning(WORKER_STATE_COLUMNS)
          .execute()
      : await base
          .set({ state: 'healthy', state_reason: 'engine_reachable', state_message: null, updated_at: now })
          .where('state', '=', 'unreachable')
          .where('state_reason', '=', 'engine_unreachable')
          .returning(WORKER_STATE_COLUMNS)
          .execute()
    await announceWorkerStates(ctx.deps, trx, moved)
  })
}
