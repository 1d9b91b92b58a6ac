/**
 * Who runs a Worker's runtime, kept in the database so it holds across control-plane instances
 * sharing one database: `worker.runtime_instance_id` (the owner), `runtime_host`, `runtime_pid`
 * and `runtime_generation` (the token generation it was started with).
 *
 * - At most one runtime per Worker: a provisioning attempt first claims the row with a
 *   compare-and-set (owner empty, itself, or an instance that is gone); while another live
 *   instance owns it, the attempt waits for that owner to stop its runtime and let go.
 * - Within one instance, everything that starts or stops a Worker's runtime runs under that
 *   Worker's lock ({@link RuntimeOwnership.withLock}); a start in progress can be aborted by a
 *   rotation, a revocation or a delete without waiting for it to finish.
 * - A revoked token stops working before the answer: rotation, revocation and delete commit the
 *   change, then {@link retireRuntime} waits until no runtime of an older generation runs (the
 *   owner stops it; each instance checks the runtimes it holds every
 *   `workers.runtimeCheckIntervalMs`).
 * - Crashes: on start, runtimes recorded on this host by an instance that is gone are stopped and
 *   their Workers provisioned again ({@link recoverRuntimes}); runtimes of an instance on another
 *   host that stops heartbeating leave their Workers `unreachable` with reason
 *   `control_plane_instance_lost` ({@link sweepLostInstances}).
 * @module
 */
import { announceWorkerStates, WORKER_STATE_COLUMNS } from './worker-events.ts'
import { isoAt } from '../deps.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import type { Provisioner } from './provisioner.ts'
import { reprovisionIn } from './provision-job.ts'

/** How long a rotation, revocation or delete waits for another live instance to stop its runtime. */
export const RETIRE_WAIT_MS = 5000

/** Pause between looks at a row another instance holds. */
const POLL_MS = 50

/** In-process part of ownership: per-Worker locks and the starts in progress. */
export class RuntimeOwnership {
  readonly #locks = new Map<string, Promise<unknown>>()
  readonly #starts = new Map<string, { generation: number; controller: AbortController }>()

  /** Runs `fn` after every earlier holder of `workerId`'s lock in this process has finished. */
  withLock<R>(workerId: string, fn: () => Promise<R>): Promise<R> {
    const previous = this.#locks.get(workerId) ?? Promise.resolve()
    const run = previous.catch(() => {}).then(fn)
    const tail = run.catch(() => {})
    this.#locks.set(workerId, tail)
    void tail.then(() => {
      if (this.#locks.get(workerId) === tail) this.#locks.delete(workerId)
    })
    return run
  }

  /** Whether `workerId`'s lock is held or awaited in this process. */
  locked(workerId: string): boolean {
    return this.#locks.has(workerId)
  }

  /** Records a start of `generation`; its signal aborts when a newer generation or a stop supersedes it. */
  beginStart(workerId: string, generation: number): AbortController {
    const controller = new AbortController()
    this.#starts.set(workerId, { generation, controller })
    return controller
  }

  /** Forgets a start (when it ends, however it ends). */
  endStart(workerId: string, controller: AbortController): void {
    if (this.#starts.get(workerId)?.controller === controller) this.#starts.delete(workerId)
  }

  /** Aborts a start in progress of a generation below `below`. */
  abortStarts(workerId: string, below: number): void {
    const start = this.#starts.get(workerId)
    if (start && start.generation < below)
      start.controller.abort(new Error('superseded: the token set changed or the Worker is stopping'))
  }

  /** Aborts every start in progress (shutdown). */
  abortAll(): void {
    for (const id of [...this.#starts.keys()]) this.abortStarts(id, Number.POSITIVE_INFINITY)
  }

  /** Starts in progress, with their generation. */
  starting(): Array<{ workerId: string; generation: number }> {
    return [...this.#starts].map(([workerId, s]) => ({ workerId, generation: s.generation }))
  }
}

/** Waits `ms`, rejecting early when `signal` aborts. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/**
 * Gives up this instance's ownership of `workerId`'s runtime when it is of a generation below
 * `below` (any generation when `below` is infinite): a compare-and-set on the owner, so a newer
 * claim (by this or another instance) is never undone.
 */
export async function releaseRuntime(ctx: AsyncContext, workerId: string, below: number): Promise<void> {
  let q = ctx.deps.db
    .updateTable('worker')
    .set({
      runtime_instance_id: null,
      runtime_host: null,
      runtime_pid: null,
      runtime_generation: null,
      runtime_url: null,
      updated_at: isoAt(ctx.deps),
    })
    .where('id', '=', workerId)
    .where('runtime_instance_id', '=', ctx.instance.id)
  if (Number.isFinite(below))
    q = q.where((eb) => eb.or([eb('runtime_generation', 'is', null), eb('runtime_generation', '<', below)]))
  await q.execute()
}

/** Stops this instance's runtime (or start in progress) of `workerId` older than `below`, and lets go. */
export async function stopLocalRuntime(ctx: AsyncContext, workerId: string, below: number): Promise<void> {
  ctx.runtimes.abortStarts(workerId, below)
  await ctx.runtimes.withLock(workerId, async () => {
    for (const provisioner of ctx.provisioners.values()) {
      const held = provisioner.running().find((r) => r.workerId === workerId)
      if (held && held.generation < below) await provisioner.stop(workerId)
    }
    await releaseRuntime(ctx, workerId, below)
  })
}

/**
 * Claims the runtime of `workerId` for this instance at `generation`, waiting while another live
 * instance owns it (it stops its older runtime once it sees the new generation). Returns false
 * when the attempt is superseded (another generation, or the Worker is no longer provisioning).
 */
export async function claimRuntime(
  ctx: AsyncContext,
  provisioner: Provisioner,
  workerId: string,
  generation: number,
  signal: AbortSignal,
): Promise<boolean> {
  for (;;) {
    signal.throwIfAborted()
    const row = await ctx.deps.db
      .selectFrom('worker')
      .select(['token_generation', 'state', 'runtime_instance_id', 'runtime_host', 'runtime_pid'])
      .where('id', '=', workerId)
      .executeTakeFirst()
    if (!row || row.token_generation !== generation || row.state !== 'provisioning') return false
    const owner = row.runtime_instance_id
    if (owner !== null && owner !== ctx.instance.id) {
      if (await ctx.instance.isLiveId(owner)) {
        await pause(POLL_MS * 2, signal)
        continue
      }
      await reapLost(ctx, provisioner, workerId, row)
    }
    let claim = ctx.deps.db
      .updateTable('worker')
      .set({
        runtime_instance_id: ctx.instance.id,
        runtime_host: ctx.instance.host,
        runtime_generation: generation,
        runtime_pid: null,
        runtime_url: null,
        updated_at: isoAt(ctx.deps),
      })
      .where('id', '=', workerId)
      .where('token_generation', '=', generation)
      .where('state', '=', 'provisioning')
    claim =
      owner === null ? claim.where('runtime_instance_id', 'is', null) : claim.where('runtime_instance_id', '=', owner)
    const moved = await claim.executeTakeFirst()
    if (Number(moved.numUpdatedRows) === 1) return true
  }
}

/** Stops a runtime recorded by an instance that is gone, when it ran on this host. */
async function reapLost(
  ctx: AsyncContext,
  provisioner: Provisioner | undefined,
  workerId: string,
  row: { runtime_host: string | null; runtime_pid: number | null },
): Promise<void> {
  if (row.runtime_pid === null) return
  if (provisioner && (row.runtime_host === ctx.instance.host || provisioner.reapsAnywhere))
    await provisioner.reap(workerId, row.runtime_pid)
  else
    ctx.log.warn('a runtime of a control plane that is gone ran on another host and cannot be stopped from here', {
      workerId,
      host: row.runtime_host,
    })
}

/** Records the pid of a runtime this instance is starting (so a crash leaves it findable). */
export async function recordSpawn(ctx: AsyncContext, workerId: string, generation: number, pid: number): Promise<void> {
  await ctx.deps.db
    .updateTable('worker')
    .set({ runtime_pid: pid, updated_at: isoAt(ctx.deps) })
    .where('id', '=', workerId)
    .where('runtime_instance_id', '=', ctx.instance.id)
    .where('runtime_generation', '=', generation)
    .execute()
}

/**
 * Returns once no runtime of `workerId` older than `below` runs: this instance's own is stopped
 * here; another live instance's is awaited (up to {@link RETIRE_WAIT_MS}); one of an instance
 * that is gone is stopped here when it ran on this host, and the row is let go.
 */
export async function retireRuntime(ctx: AsyncContext, workerId: string, below: number): Promise<void> {
  await stopLocalRuntime(ctx, workerId, below)
  const deadline = Date.now() + RETIRE_WAIT_MS
  for (;;) {
    const row = await ctx.deps.db
      .selectFrom('worker')
      .select(['provisioner', 'runtime_instance_id', 'runtime_host', 'runtime_pid', 'runtime_generation'])
      .where('id', '=', workerId)
      .executeTakeFirst()
    const owner = row?.runtime_instance_id ?? null
    if (!row || owner === null || (row.runtime_generation ?? 0) >= below) return
    if (owner === ctx.instance.id) {
      await stopLocalRuntime(ctx, workerId, below)
      continue
    }
    const live = await ctx.instance.isLiveId(owner)
    if (live && Date.now() < deadline) {
      await pause(POLL_MS)
      continue
    }
    if (live)
      ctx.log.warn('the control plane that owns a Worker runtime did not stop it in time; taking it over', {
        workerId,
        ownerInstanceId: owner,
      })
    await reapLost(ctx, ctx.provisioners.get(row.provisioner), workerId, row)
    await ctx.deps.db
      .updateTable('worker')
      .set({ runtime_instance_id: null, runtime_pid: null, runtime_url: null, updated_at: isoAt(ctx.deps) })
      .where('id', '=', workerId)
      .where('runtime_instance_id', '=', owner)
      .execute()
    return
  }
}

/**
 * One pass of this instance's watch over the runtimes it holds: a runtime whose Worker was
 * deleted, stopped, failed, given a new token set, or taken over by another instance is stopped;
 * ownership this instance no longer needs is let go.
 */
export async function watchRuntimes(ctx: AsyncContext): Promise<void> {
  const held = new Map<string, number>()
  for (const provisioner of ctx.provisioners.values())
    for (const r of provisioner.running()) held.set(r.workerId, r.generation)
  const starting = new Map(ctx.runtimes.starting().map((s) => [s.workerId, s.generation]))
  const ids = [...new Set([...held.keys(), ...starting.keys()])]
  const rows = await ctx.deps.db
    .selectFrom('worker')
    .select(['id', 'token_generation', 'state', 'runtime_instance_id', 'runtime_generation'])
    .where((eb) =>
      ids.length > 0
        ? eb.or([eb('runtime_instance_id', '=', ctx.instance.id), eb('id', 'in', ids)])
        : eb('runtime_instance_id', '=', ctx.instance.id),
    )
    .execute()
  const byId = new Map(rows.map((r) => [r.id, r]))
  const ended = (state: string) => state === 'stopped' || state === 'failed'
  for (const [workerId, generation] of starting) {
    const row = byId.get(workerId)
    if (!row || row.token_generation !== generation || ended(row.state))
      ctx.runtimes.abortStarts(workerId, generation + 1)
  }
  for (const [workerId, generation] of held) {
    if (starting.has(workerId)) continue
    const row = byId.get(workerId)
    if (!row || row.runtime_instance_id !== ctx.instance.id || row.token_generation !== generation || ended(row.state))
      await stopLocalRuntime(ctx, workerId, Number.POSITIVE_INFINITY)
  }
  for (const row of rows) {
    if (row.runtime_instance_id !== ctx.instance.id || held.has(row.id) || starting.has(row.id)) continue
    if (ctx.runtimes.locked(row.id)) continue
    if (row.runtime_generation !== row.token_generation || ended(row.state))
      await releaseRuntime(ctx, row.id, Number.POSITIVE_INFINITY)
  }
}

/**
 * On start: runtimes recorded on this host by an instance that is gone (a crash, SIGKILL) are
 * stopped, and their Workers that should run are provisioned again with the same token set.
 * Returns how many Workers were recovered.
 */
export async function recoverRuntimes(ctx: AsyncContext): Promise<number> {
  await ctx.instance.markGone()
  const rows = await ctx.deps.db
    .selectFrom('worker')
    .select(['id', 'org_id', 'provisioner', 'state', 'token_generation', 'credentials_sealed'])
    .select(['runtime_instance_id', 'runtime_host', 'runtime_pid'])
    .where('runtime_host', '=', ctx.instance.host)
    .where('runtime_pid', 'is not', null)
    .where((eb) => eb.or([eb('runtime_instance_id', 'is', null), eb('runtime_instance_id', '!=', ctx.instance.id)]))
    .execute()
  let recovered = 0
  for (const row of rows) {
    if (row.runtime_instance_id !== null && (await ctx.instance.isLiveId(row.runtime_instance_id))) continue
    await reapLost(ctx, ctx.provisioners.get(row.provisioner), row.id, row)
    const restart = row.credentials_sealed !== null && ['provisioning', 'healthy', 'unreachable'].includes(row.state)
    await ctx.deps.db.transaction().execute(async (trx) => {
      const now = isoAt(ctx.deps)
      let q = trx
        .updateTable('worker')
        .set({
          runtime_instance_id: null,
          runtime_host: null,
          runtime_pid: null,
          runtime_generation: null,
          runtime_url: null,
          ...(restart
            ? {
                state: 'provisioning',
                state_reason: 'runtime_recovered',
                state_message:
                  'The control plane that ran this runtime stopped without shutting it down; the runtime was stopped and starts again',
                provisioning_deadline_at: isoAt(ctx.deps, ctx.settings.workers.provisioningDeadlineMs),
              }
            : {}),
          updated_at: now,
        })
        .where('id', '=', row.id)
        .where('runtime_pid', '=', row.runtime_pid!)
        .where('token_generation', '=', row.token_generation)
      q =
        row.runtime_instance_id === null
          ? q.where('runtime_instance_id', 'is', null)
          : q.where('runtime_instance_id', '=', row.runtime_instance_id)
      const moved = await q.returning(WORKER_STATE_COLUMNS).executeTakeFirst()
      if (!moved || !restart) return
      await announceWorkerStates(ctx.deps, trx, [moved])
      recovered++
      await reprovisionIn(ctx, trx, row, row.token_generation)
    })
  }
  return recovered
}

/**
 * Part of the Worker sweep, safe on every instance at once: Workers whose runtime belongs to an
 * instance that is gone end `unreachable` with reason `control_plane_instance_lost` (a
 * conditional update, so each moves once), and their runtimes are stopped when they ran on this
 * host. Provisioning Workers are left to their job, which another instance resumes once the
 * job's lease lapses. Returns how many Workers this call moved.
 */
export async function sweepLostInstances(ctx: AsyncContext): Promise<number> {
  let moved = 0
  await ctx.instance.markGone()
  const owners = await ctx.deps.db
    .selectFrom('worker')
    .select('runtime_instance_id')
    .distinct()
    .where('runtime_instance_id', 'is not', null)
    .where('runtime_instance_id', '!=', ctx.instance.id)
    .execute()
  for (const { runtime_instance_id: owner } of owners) {
    if (!owner || (await ctx.instance.isLiveId(owner))) continue
    const rows = await ctx.deps.db
      .selectFrom('worker')
      .select(['id', 'provisioner', 'state', 'runtime_host', 'runtime_pid'])
      .where('runtime_instance_id', '=', owner)
      .where('state', '!=', 'provisioning')
      .execute()
    for (const row of rows) {
      const here =
        row.runtime_host === ctx.instance.host || ctx.provisioners.get(row.provisioner)?.reapsAnywhere === true
      if (here) await reapLost(ctx, ctx.provisioners.get(row.provisioner), row.id, row)
      const now = isoAt(ctx.deps)
      const lost = row.state === 'healthy' || row.state === 'unreachable'
      const message = `Control-plane instance ${owner}, which ran this runtime, stopped heartbeating`
      const result = await ctx.deps.db.transaction().execute(async (trx) => {
        const changed = await trx
          .updateTable('worker')
          .set({
            ...(lost
              ? {
                  state: 'unreachable',
                  state_reason: 'control_plane_instance_lost',
                  state_message: message,
                  last_error_reason: 'control_plane_instance_lost',
                  last_error_message: message,
                  last_error_at: now,
                }
              : {}),
            runtime_instance_id: null,
            runtime_url: null,
            // A runtime on another host is kept on record, so a control plane restarted there stops it.
            ...(here ? { runtime_host: null, runtime_pid: null } : {}),
            updated_at: now,
          })
          .where('id', '=', row.id)
          .where('runtime_instance_id', '=', owner)
          .where('state', '=', row.state)
          .returning(WORKER_STATE_COLUMNS)
          .executeTakeFirst()
        if (changed && lost) await announceWorkerStates(ctx.deps, trx, [changed])
        return changed ? 1 : 0
      })
      moved += result
    }
  }
  return moved
}
