/**
 * What moves a Worker between states: the provisioning job, heartbeats from the runtime, and two
 * sweeps on the job loop (overdue provisioning → `failed`, stale heartbeats → `unreachable`).
 * Provisioning never waits forever: the job has a deadline per attempt and the Worker has a
 * provisioning deadline overall, both ending in a stored reason.
 * @module
 */
import { parseBearer } from '../../core/bearer-token.ts'
import { errors } from '../../core/errors.ts'
import { hashToken, secretsEqual } from '../../core/secrets.ts'
import { isoAt } from '../deps.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { enqueueJob, JobFailure, LeaseLost, shortMessage } from '../jobs/job-queue.ts'
import type { JobHandler } from '../jobs/job-handler.ts'
import type { ProvisionedRuntime } from './provisioner.ts'
import { claimRuntime, recordSpawn, releaseRuntime, stopLocalRuntime } from './runtime-ownership.ts'
import { PROVISION_JOB, reprovisionIn } from './provision-job.ts'
import { openCredentials, type WorkerState } from './workers.ts'
import { announceWorkerStates, WORKER_STATE_COLUMNS } from './worker-events.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/**
 * The provisioning job: claims the Worker's runtime for this instance (waiting while another
 * instance still runs an older one) and starts it with the current token set, all under the
 * Worker's lock; a rotation, revocation or delete aborts it.
 */
export function provisionJobHandler(ctx: AsyncContext): JobHandler<{ generation: number }> {
  return {
    kind: PROVISION_JOB,
    run(job) {
      const workerId = job.job.subject_id!
      const generation = job.payload.generation
      return ctx.runtimes.withLock(workerId, async () => {
        const row = await ctx.deps.db.selectFrom('worker').selectAll().where('id', '=', workerId).executeTakeFirst()
        if (row?.state !== 'provisioning' || row.token_generation !== generation) return { skipped: true }
        const provisioner = ctx.provisioners.get(row.provisioner)
        if (!provisioner)
          throw new JobFailure(
            'provisioner_unavailable',
            `No provisioner named ${row.provisioner} on this control plane`,
            { retriable: false },
          )
        const controlPlaneUrl = ctx.controlPlaneUrl()
        if (!controlPlaneUrl)
          throw new JobFailure(
            'control_plane_url_unknown',
            'The control plane does not know its own URL yet (set workers.publicUrl)',
          )
        const credentials = openCredentials(ctx, row)
        if (!credentials) throw new JobFailure('tokens_revoked', 'The Worker has no token set', { retriable: false })
        const local = ctx.runtimes.beginStart(workerId, generation)
        const signal = AbortSignal.any([job.signal, local.signal])
        let started = false
        try {
          if (!(await claimRuntime(ctx, provisioner, workerId, generation, signal))) return { skipped: true }
          let runtime: ProvisionedRuntime
          // Heartbeats from here on come from this start's runtime (its generation's token).
          const startedAt = isoAt(ctx.deps)
          try {
            runtime = await provisioner.start({
              workerId,
              orgId: row.org_id,
              name: row.name,
              credentials,
              controlPlaneUrl,
              heartbeatIntervalMs: ctx.settings.workers.heartbeatIntervalMs,
              generation,
              onSpawn: (pid) => recordSpawn(ctx, workerId, generation, pid),
              signal,
            })
          } catch (error) {
            if (error instanceof JobFailure || job.signal.aborted) throw error
            if (local.signal.aborted) throw new LeaseLost()
            throw new JobFailure('provisioner_error', (error as Error).message)
          }
          started = true
          const recorded = await job.commit(async (trx) => {
            const result = await trx
              .updateTable('worker')
              .set({
                runtime_url: runtime.url,
                runtime_pid: runtime.pid,
                workspace_dir: runtime.workspaceDir,
                updated_at: isoAt(ctx.deps),
              })
              .where('id', '=', workerId)
              .where('token_generation', '=', generation)
              .where('runtime_instance_id', '=', ctx.instance.id)
              .executeTakeFirst()
            // A heartbeat that arrived before the URL was recorded left the Worker provisioning
            // (healthy means reachable); it counts now.
            const caughtUp = await trx
              .updateTable('worker')
              .set({
                state: 'healthy',
                state_reason: 'heartbeat',
                state_message: null,
                provisioning_deadline_at: null,
                updated_at: isoAt(ctx.deps),
              })
              .where('id', '=', workerId)
              .where('state', '=', 'provisioning')
              .where('token_generation', '=', generation)
              .where('runtime_instance_id', '=', ctx.instance.id)
              .where('last_heartbeat_at', '>=', startedAt)
              .returning(WORKER_STATE_COLUMNS)
              .execute()
            await announceWorkerStates(ctx.deps, trx, caughtUp)
            return result
          })
          // Superseded (deleted, tokens rotated or revoked, taken over) while starting.
          if (Number(recorded.numUpdatedRows) !== 1) throw new LeaseLost()
          return { url: runtime.url }
        } catch (error) {
          // Do not leave a runtime of a superseded or failed attempt running, nor its claim held.
          if (started) await provisioner.stop(workerId)
          await releaseRuntime(ctx, workerId, generation + 1)
          throw error
        } finally {
          ctx.runtimes.endStart(workerId, local)
        }
      })
    },
    async onFailure(trx, job, failure) {
      const now = isoAt(ctx.deps)
      const changes = failure.final
        ? { state: 'failed', state_reason: failure.reason, state_message: failure.message }
        : {}
      const failed = await trx
        .updateTable('worker')
        .set({
          ...changes,
          last_error_reason: failure.reason,
          last_error_message: failure.message,
          last_error_at: now,
          updated_at: now,
        })
        .where('id', '=', job.subject_id!)
        .where('state', '=', 'provisioning')
        .returning(WORKER_STATE_COLUMNS)
        .execute()
      if (failure.final) await announceWorkerStates(ctx.deps, trx, failed)
      if (failure.final) {
        // A runtime this instance still holds for the Worker is stopped (by the watch, which sees
        // the failed state) and the claim is let go here, in the transaction that fails it.
        await trx
          .updateTable('worker')
          .set({ runtime_instance_id: null, runtime_pid: null, runtime_url: null, runtime_generation: null })
          .where('id', '=', job.subject_id!)
          .where('runtime_instance_id', '=', ctx.instance.id)
          .where('state', '=', 'failed')
          .execute()
        void stopLocalRuntime(ctx, job.subject_id!, Number.POSITIVE_INFINITY).catch(() => {})
      }
    },
    async onRetry(trx, job) {
      const now = isoAt(ctx.deps)
      await trx
        .updateTable('worker')
        .set({
          state: 'provisioning',
          state_reason: 'retried',
          state_message: null,
          provisioning_deadline_at: isoAt(ctx.deps, ctx.settings.workers.provisioningDeadlineMs),
          updated_at: now,
        })
        .where('id', '=', job.subject_id!)
        .where('state', '=', 'failed')
        .returning(WORKER_STATE_COLUMNS)
        .execute()
        .then((rows) => announceWorkerStates(ctx.deps, trx, rows))
    },
  }
}

/** Heartbeat body. */
export interface HeartbeatInput {
  sentAt?: string
  isActiveRecently?: boolean
  lastActivityAt?: string
  openSessionCount?: number
  version?: string
}

/** Heartbeat answer. */
export interface HeartbeatView {
  workerId: string
  state: WorkerState
  lastHeartbeatAt: string
  nextHeartbeatInMs: number
}

const laterOf = (a: string | null, b: string | null): string | null => (!a ? b : !b ? a : a > b ? a : b)

/**
 * `POST /v1/workers/:id/heartbeat`, authenticated by the Worker's current activity token (401
 * for anything else, including another Worker's token). Moves `provisioning` and `unreachable`
 * to `healthy`; timestamps only move forward.
 */
export async function recordHeartbeat(
  ctx: AsyncContext,
  workerId: string,
  authorization: string | null,
  input: HeartbeatInput,
): Promise<HeartbeatView> {
  const token = parseBearer(authorization)
  if (!token) throw errors.unauthorized('Send the Worker activity token as Authorization: Bearer <token>')
  const hash = hashToken(token)
  const stored = await ctx.deps.db
    .selectFrom('worker_token')
    .select(['worker_id', 'token_hash'])
    .where('token_hash', '=', hash)
    .where('scope', '=', 'activity')
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  if (!stored || stored.worker_id !== workerId || !secretsEqual(stored.token_hash, hash))
    throw errors.unauthorized('Invalid activity token for this Worker')
  const now = isoAt(ctx.deps)
  const row = await ctx.deps.db.selectFrom('worker').selectAll().where('id', '=', workerId).executeTakeFirst()
  if (!row) throw errors.unauthorized('Invalid activity token for this Worker')
  if (row.state === 'stopped' || row.state === 'failed') {
    throw controlPlaneError('worker_not_running', `The Worker is ${row.state}; its runtime should stop`, {
      details: {
        state: row.state,
        reason: row.state_reason,
      },
    })
  }
  // An unreachable engine is cleared by the provisioner's check of the engine, not by a heartbeat.
  // A provisioning Worker becomes healthy once its URL is recorded too (the start job does it if
  // this heartbeat comes first), so a healthy Worker always has an address.
  const becomesHealthy =
    (row.state === 'provisioning' && row.runtime_url !== null) ||
    (row.state === 'unreachable' && row.state_reason !== 'engine_unreachable')
  const lastActive = input.isActiveRecently
    ? laterOf(row.last_active_at, input.lastActivityAt ?? now)
    : row.last_active_at
  await ctx.deps.db.transaction().execute(async (trx) => {
    const moved = await trx
      .updateTable('worker')
      .set({
        last_heartbeat_at: laterOf(row.last_heartbeat_at, now)!,
        last_active_at: lastActive,
        open_session_count: input.openSessionCount ?? row.open_session_count,
        version: input.version ?? row.version,
        ...(becomesHealthy
          ? { state: 'healthy', state_reason: 'heartbeat', state_message: null, provisioning_deadline_at: null }
          : {}),
        updated_at: now,
      })
      .where('id', '=', workerId)
      .where('state', '=', row.state)
      .returning(WORKER_STATE_COLUMNS)
      .execute()
    if (becomesHealthy) await announceWorkerStates(ctx.deps, trx, moved)
  })
  return {
    workerId,
    state: becomesHealthy ? 'healthy' : (row.state as WorkerState),
    lastHeartbeatAt: laterOf(row.last_heartbeat_at, now)!,
    nextHeartbeatInMs: ctx.settings.workers.heartbeatIntervalMs,
  }
}

/** Marks overdue provisioning `failed` and stale healthy Workers `unreachable`. */
export async function sweepWorkers(ctx: AsyncContext): Promise<void> {
  const now = isoAt(ctx.deps)
  const overdue = await ctx.deps.db
    .selectFrom('worker')
    .select(['id', 'provisioner', 'last_error_reason', 'last_error_message'])
    .where('state', '=', 'provisioning')
    .where('provisioning_deadline_at', '<', now)
    .execute()
  for (const row of overdue) {
    const cause = row.last_error_reason ? ` (last error ${row.last_error_reason}: ${row.last_error_message ?? ''})` : ''
    await ctx.deps.db.transaction().execute(async (trx) => {
      const moved = await trx
        .updateTable('worker')
        .set({
          state: 'failed',
          state_reason: 'provisioning_deadline_exceeded',
          state_message: shortMessage(
            `The runtime did not report a heartbeat within ${ctx.settings.workers.provisioningDeadlineMs} ms${cause}`,
          ),
          updated_at: now,
        })
        .where('id', '=', row.id)
        .where('state', '=', 'provisioning')
        .returning(WORKER_STATE_COLUMNS)
        .executeTakeFirst()
      if (!moved) return
      await announceWorkerStates(ctx.deps, trx, [moved])
      await trx
        .updateTable('job')
        .set({ status: 'canceled', finished_at: now, updated_at: now, locked_by: null, lease_until: null })
        .where('subject_id', '=', row.id)
        .where('status', 'in', ['queued', 'running'])
        .execute()
    })
    await stopLocalRuntime(ctx, row.id, Number.POSITIVE_INFINITY)
  }
  const staleBefore = isoAt(ctx.deps, -ctx.settings.workers.staleAfterMs)
  await ctx.deps.db.transaction().execute(async (trx) => {
    const moved = await trx
      .updateTable('worker')
      .set({
        state: 'unreachable',
        state_reason: 'heartbeat_stale',
        state_message: `No heartbeat for more than ${ctx.settings.workers.staleAfterMs} ms`,
        updated_at: now,
      })
      .where('state', '=', 'healthy')
      .where('last_heartbeat_at', '<', staleBefore)
      .returning(WORKER_STATE_COLUMNS)
      .execute()
    await announceWorkerStates(ctx.deps, trx, moved)
  })
}

/** Keeps a runtime's own exit (crash, kill) as the Worker's last error. */
export async function recordRuntimeExit(
  ctx: AsyncContext,
  workerId: string,
  reason: { reason: string; message: string },
): Promise<void> {
  const now = isoAt(ctx.deps)
  await ctx.deps.db
    .updateTable('worker')
    .set({
      last_error_reason: reason.reason,
      last_error_message: shortMessage(reason.message),
      last_error_at: now,
      runtime_pid: null,
      runtime_url: null,
      // Nothing runs any more: a rotation need not wait for this instance.
      runtime_instance_id: null,
      runtime_generation: null,
      updated_at: now,
    })
    .where('id', '=', workerId)
    .where('runtime_instance_id', '=', ctx.instance.id)
    .execute()
}

/**
 * On shutdown: runtimes started by this control plane stop with it (and are waited for). When
 * another instance is live, their Workers go back to `provisioning` so it starts them again at
 * once (a rolling restart keeps them available); otherwise they are `stopped` with reason
 * `control_plane_stopped` and the next control plane to start restarts them.
 */
export async function stopRuntimes(ctx: AsyncContext): Promise<void> {
  for (const provisioner of ctx.provisioners.values()) await provisioner.close()
  const others = (
    await ctx.deps.db
      .selectFrom('control_plane_instance')
      .selectAll()
      .where('stopped_at', 'is', null)
      .where('id', '!=', ctx.instance.id)
      .execute()
  ).some((row) => ctx.instance.isLive(row))
  const rows = await ctx.deps.db
    .selectFrom('worker')
    .select(['id', 'org_id', 'state', 'token_generation', 'credentials_sealed'])
    .where('runtime_instance_id', '=', ctx.instance.id)
    .execute()
  for (const row of rows) {
    await ctx.deps.db.transaction().execute(async (trx) => {
      const now = isoAt(ctx.deps)
      const running = ['provisioning', 'healthy', 'unreachable'].includes(row.state)
      const handOver = running && others && row.credentials_sealed !== null
      const moved = await trx
        .updateTable('worker')
        .set({
          ...(handOver
            ? {
                state: 'provisioning',
                state_reason: 'control_plane_stopped',
                state_message: 'The control plane that ran this runtime stopped; another instance starts it again',
                provisioning_deadline_at: isoAt(ctx.deps, ctx.settings.workers.provisioningDeadlineMs),
              }
            : running
              ? {
                  state: 'stopped',
                  state_reason: 'control_plane_stopped',
                  state_message: 'The control plane that ran this runtime stopped',
                }
              : {}),
          runtime_instance_id: null,
          runtime_host: null,
          runtime_pid: null,
          runtime_generation: null,
          runtime_url: null,
          updated_at: now,
        })
        .where('id', '=', row.id)
        .where('runtime_instance_id', '=', ctx.instance.id)
        .where('state', '=', row.state)
        .returning(WORKER_STATE_COLUMNS)
        .executeTakeFirst()
      if (moved && running) await announceWorkerStates(ctx.deps, trx, [moved])
      if (!handOver || !moved) return
      await reprovisionIn(ctx, trx, row, row.token_generation)
    })
  }
}

/**
 * On start: runtimes this control plane stopped when it last shut down are started again with
 * the same token set, so clients keep working across a control-plane restart or upgrade.
 */
export async function resumeRuntimes(ctx: AsyncContext): Promise<number> {
  const rows = await ctx.deps.db
    .selectFrom('worker')
    .select(['id', 'org_id', 'token_generation'])
    .where('state', '=', 'stopped')
    .where('state_reason', '=', 'control_plane_stopped')
    .where('credentials_sealed', 'is not', null)
    .execute()
  for (const row of rows) {
    await ctx.deps.db.transaction().execute(async (trx) => {
      const now = isoAt(ctx.deps)
      const moved = await trx
        .updateTable('worker')
        .set({
          state: 'provisioning',
          state_reason: 'control_plane_restarted',
          state_message: null,
          runtime_url: null,
          provisioning_deadline_at: isoAt(ctx.deps, ctx.settings.workers.provisioningDeadlineMs),
          updated_at: now,
        })
        .where('id', '=', row.id)
        .where('state', '=', 'stopped')
        .returning(WORKER_STATE_COLUMNS)
        .executeTakeFirst()
      if (!moved) return
      await announceWorkerStates(ctx.deps, trx, [moved])
      await enqueueJob(trx, ctx.deps.now(), {
        kind: PROVISION_JOB,
        orgId: row.org_id,
        subjectId: row.id,
        payload: { generation: row.token_generation },
        maxAttempts: ctx.settings.workers.maxAttempts,
        deadlineMs: ctx.settings.workers.provisioningDeadlineMs,
      })
    })
  }
  return rows.length
}
