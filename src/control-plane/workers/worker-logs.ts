/**
 * `GET /v1/workers/:id/logs`: a Worker runtime's recent output, from whichever provisioner runs
 * it, bounded and with secrets redacted here (runtime-log.ts) whatever the provisioner returned.
 *
 * A `process` runtime's output is a file on the host that ran it. An instance on another host
 * cannot read it and does not proxy (instances know each other's host, not an address to reach
 * them at): it answers 409 `worker_runtime_elsewhere` naming the host and instance, and the
 * client asks again through that instance (e.g. a load balancer's sticky route, or the instance's
 * own address). Instances on the same host share the Workers data directory, so any of them
 * answers, also for a runtime left by a crashed instance.
 * @module
 */
import type { AsyncContext } from '../jobs/async-context.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { ProcessProvisioner } from './process-provisioner.ts'
import { boundLogLines } from './runtime-log.ts'

/** The Worker's recent output: at most `tail` lines, oldest first. */
export async function workerLogs(
  ctx: AsyncContext,
  orgId: string,
  workerId: string,
  tail: number,
): Promise<{ lines: string[]; truncated: boolean }> {
  const row = await ctx.deps.db
    .selectFrom('worker')
    .select(['provisioner', 'runtime_instance_id', 'runtime_host'])
    .where('id', '=', workerId)
    .where('org_id', '=', orgId)
    .executeTakeFirst()
  if (!row) throw controlPlaneError('worker_not_found', 'Worker not found')
  const provisioner = ctx.provisioners.get(row.provisioner)
  if (!provisioner)
    throw controlPlaneError(
      'worker_runtime_elsewhere',
      `The ${row.provisioner} provisioner is not configured on this control-plane instance`,
      { details: { provisioner: row.provisioner, host: row.runtime_host, instanceId: row.runtime_instance_id } },
    )
  if (provisioner instanceof ProcessProvisioner && row.runtime_host !== null && row.runtime_host !== ctx.instance.host)
    throw controlPlaneError(
      'worker_runtime_elsewhere',
      `The runtime's output is on host ${row.runtime_host}; ask a control-plane instance there`,
      { details: { provisioner: row.provisioner, host: row.runtime_host, instanceId: row.runtime_instance_id } },
    )
  return boundLogLines(await provisioner.logs(workerId, tail), tail)
}
