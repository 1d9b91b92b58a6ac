/**
 * Hosted Workers: organization-managed runtimes (spec §4B rule 5). Creating one only records it
 * and queues provisioning (202); clients re-read it by id. States:
 *
 *   provisioning → healthy → unreachable → healthy …
 *        │            │          │
 *        └→ failed    └→ stopped └→ stopped
 *
 * Every move keeps a reason (`state_reason`, e.g. `provisioning_deadline_exceeded`,
 * `heartbeat_stale`, `tokens_revoked`) and the last error is kept separately, so a failure is
 * never thrown away.
 *
 * Tokens come in sets (client, host, activity), stored as SHA-256; the set the runtime runs with
 * is also kept sealed so provisioning can launch it. Issuing a new set revokes the previous one
 * and restarts the runtime with the new set (the only way a running runtime stops accepting the
 * old tokens).
 * @module
 */
import type { Transaction } from 'kysely'
import { newId } from '../../core/ids.ts'
import { generateToken, hashToken } from '../../core/secrets.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import { isoAt } from '../deps.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { keysetPage, type Page } from '../pagination.ts'
import { retireRuntime } from './runtime-ownership.ts'
import { reprovisionIn } from './provision-job.ts'
import type { ControlPlaneDb } from '../schema.ts'
import type { RuntimeCredentials } from './provisioner.ts'
import type { WorkerTable } from './worker-tables.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** Worker states. */
export const WORKER_STATES = ['provisioning', 'healthy', 'unreachable', 'stopped', 'failed'] as const
/** A Worker state. */
export type WorkerState = (typeof WORKER_STATES)[number]
/** Token scopes. */
export const WORKER_TOKEN_SCOPES = ['client', 'host', 'activity'] as const

/** A Worker as the API shows it. */
export interface WorkerView {
  id: string
  name: string
  description: string | null
  provisioner: string
  state: WorkerState
  stateReason: string | null
  stateMessage: string | null
  version: string | null
  lastHeartbeatAt: string | null
  createdByMemberId: string | null
  createdAt: string
  updatedAt: string
}

/** Runtime status: what the runtime last reported and why it is in its state. */
export interface WorkerRuntimeView {
  workerId: string
  state: WorkerState
  stateReason: string | null
  stateMessage: string | null
  version: string | null
  url: string | null
  lastHeartbeatAt: string | null
  lastActiveAt: string | null
  openSessionCount: number | null
  staleAfterMs: number
  provisioningDeadlineAt: string | null
  lastError: { reason: string; message: string; at: string } | null
}

/** A stored token (never its value). */
export interface WorkerTokenView {
  id: string
  scope: string
  generation: number
  createdAt: string
  revokedAt: string | null
}

const workerNotFound = () => controlPlaneError('worker_not_found', 'Worker not found')

/** Maps a row to its view. */
export function workerView(row: WorkerTable): WorkerView {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    provisioner: row.provisioner,
    state: row.state as WorkerState,
    stateReason: row.state_reason,
    stateMessage: row.state_message,
    version: row.version,
    lastHeartbeatAt: row.last_heartbeat_at,
    createdByMemberId: row.created_by_member_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

async function workerRow(ctx: AsyncContext, orgId: string, workerId: string): Promise<WorkerTable> {
  const row = await ctx.deps.db
    .selectFrom('worker')
    .selectAll()
    .where('id', '=', workerId)
    .where('org_id', '=', orgId)
    .executeTakeFirst()
  if (!row) throw workerNotFound()
  return row
}

/** A fresh token set. */
function newCredentials(): RuntimeCredentials {
  return { client: generateToken('wkc_'), host: generateToken('wkh_'), activity: generateToken('wka_') }
}

/** A concurrent rotation changed the generation first: the caller reads the row again. */
class GenerationRace extends Error {}

/**
 * Stores a new token set (revoking earlier ones), seals it on the Worker and queues provisioning.
 * The first write is a compare-and-set on the generation, so rotations of one Worker are
 * serialized through its row on every engine and instance (a loser throws {@link GenerationRace}).
 */
async function installCredentials(
  ctx: AsyncContext,
  trx: Transaction<ControlPlaneDb>,
  row: Pick<WorkerTable, 'id' | 'org_id' | 'token_generation'>,
  credentials: RuntimeCredentials,
): Promise<number> {
  const now = isoAt(ctx.deps)
  const generation = row.token_generation + 1
  const moved = await trx
    .updateTable('worker')
    .set({
      credentials_sealed: ctx.box.seal(JSON.stringify(credentials), row.id),
      token_generation: generation,
      state: 'provisioning',
      state_reason: generation === 1 ? 'created' : 'tokens_rotated',
      state_message: null,
      // The runtime restarts; its new address is known once it listens.
      runtime_url: null,
      provisioning_deadline_at: isoAt(ctx.deps, ctx.settings.workers.provisioningDeadlineMs),
      updated_at: now,
    })
    .where('id', '=', row.id)
    .where('token_generation', '=', row.token_generation)
    .executeTakeFirst()
  if (Number(moved.numUpdatedRows) !== 1) throw new GenerationRace()
  await trx
    .updateTable('worker_token')
    .set({ revoked_at: now })
    .where('worker_id', '=', row.id)
    .where('revoked_at', 'is', null)
    .execute()
  for (const scope of WORKER_TOKEN_SCOPES) {
    await trx
      .insertInto('worker_token')
      .values({
        id: newId('wkt'),
        worker_id: row.id,
        org_id: row.org_id,
        scope,
        token_hash: hashToken(credentials[scope]),
        generation,
        created_at: now,
        revoked_at: null,
      })
      .execute()
  }
  await reprovisionIn(ctx, trx, row, generation)
  return generation
}

/** Opens the sealed token set of a Worker. */
export function openCredentials(
  ctx: AsyncContext,
  row: Pick<WorkerTable, 'id' | 'credentials_sealed'>,
): RuntimeCredentials | null {
  return row.credentials_sealed
    ? (JSON.parse(ctx.box.open(row.credentials_sealed, row.id)) as RuntimeCredentials)
    : null
}

/** `POST /v1/workers`: records the Worker and queues provisioning. */
export async function createWorker(
  ctx: AsyncContext,
  actor: Actor,
  input: { name: string; description?: string | null; provisioner: string },
): Promise<WorkerView> {
  if (!ctx.provisioners.has(input.provisioner)) {
    throw controlPlaneError('validation_failed', 'Unknown provisioner', {
      details: {
        issues: [{ path: 'provisioner', message: `must be one of: ${[...ctx.provisioners.keys()].join(', ')}` }],
      },
    })
  }
  const id = newId('wrk')
  const now = isoAt(ctx.deps)
  await ctx.deps.db.transaction().execute(async (trx) => {
    await trx
      .insertInto('worker')
      .values({
        id,
        org_id: actor.orgId,
        name: input.name,
        description: input.description ?? null,
        provisioner: input.provisioner,
        state: 'provisioning',
        state_reason: 'created',
        state_message: null,
        version: null,
        runtime_url: null,
        runtime_pid: null,
        workspace_dir: null,
        last_heartbeat_at: null,
        last_active_at: null,
        open_session_count: null,
        last_error_reason: null,
        last_error_message: null,
        last_error_at: null,
        provisioning_deadline_at: null,
        credentials_sealed: null,
        token_generation: 0,
        created_by_member_id: actor.memberId,
        created_at: now,
        updated_at: now,
      })
      .execute()
    await installCredentials(ctx, trx, { id, org_id: actor.orgId, token_generation: 0 }, newCredentials())
    await recordAudit(
      ctx.deps,
      trx,
      actor,
      'worker.created',
      { type: 'worker', id },
      { provisioner: input.provisioner },
    )
  })
  ctx.jobs.wake()
  return getWorker(ctx, actor.orgId, id)
}

/** Workers of the organization, newest first. */
export function listWorkers(
  ctx: AsyncContext,
  orgId: string,
  query: { cursor?: string; limit: number; state?: string },
): Promise<Page<WorkerView>> {
  let q = ctx.deps.db.selectFrom('worker').selectAll().where('org_id', '=', orgId)
  if (query.state) q = q.where('state', '=', query.state)
  return keysetPage(q, {
    scope: 'workers',
    cursor: query.cursor,
    limit: query.limit,
    order: [{ column: 'id', field: 'id', direction: 'desc' }],
    map: workerView,
  })
}

/** One Worker. */
export async function getWorker(ctx: AsyncContext, orgId: string, workerId: string): Promise<WorkerView> {
  return workerView(await workerRow(ctx, orgId, workerId))
}

/** Runtime status of one Worker. */
export async function getWorkerRuntime(ctx: AsyncContext, orgId: string, workerId: string): Promise<WorkerRuntimeView> {
  const row = await workerRow(ctx, orgId, workerId)
  return {
    workerId: row.id,
    state: row.state as WorkerState,
    stateReason: row.state_reason,
    stateMessage: row.state_message,
    version: row.version,
    url: row.runtime_url,
    lastHeartbeatAt: row.last_heartbeat_at,
    lastActiveAt: row.last_active_at,
    openSessionCount: row.open_session_count,
    staleAfterMs: ctx.settings.workers.staleAfterMs,
    provisioningDeadlineAt: row.state === 'provisioning' ? row.provisioning_deadline_at : null,
    lastError: row.last_error_reason
      ? {
          reason: row.last_error_reason,
          message: row.last_error_message ?? '',
          at: row.last_error_at ?? row.updated_at,
        }
      : null,
  }
}

/**
 * Revokes the Worker's tokens, cancels its jobs and marks it `stopped` (one transaction), then
 * waits until no runtime of it runs on any instance.
 */
async function stopWorker(
  ctx: AsyncContext,
  actor: Actor,
  workerId: string,
  reason: { state_reason: string; state_message: string },
  audit: (trx: Transaction<ControlPlaneDb>, row: WorkerTable) => Promise<void>,
): Promise<void> {
  const row = await workerRow(ctx, actor.orgId, workerId)
  await ctx.deps.db.transaction().execute(async (trx) => {
    const now = isoAt(ctx.deps)
    // The Worker row first: its write lock orders this against a concurrent rotation.
    await trx
      .updateTable('worker')
      .set({ state: 'stopped', ...reason, credentials_sealed: null, runtime_url: null, updated_at: now })
      .where('id', '=', row.id)
      .execute()
    await trx
      .updateTable('worker_token')
      .set({ revoked_at: now })
      .where('worker_id', '=', row.id)
      .where('revoked_at', 'is', null)
      .execute()
    await trx
      .updateTable('job')
      .set({ status: 'canceled', finished_at: now, updated_at: now, locked_by: null, lease_until: null })
      .where('subject_id', '=', row.id)
      .where('status', 'in', ['queued', 'running'])
      .execute()
    await audit(trx, row)
  })
  await retireRuntime(ctx, row.id, Number.POSITIVE_INFINITY)
}

/**
 * `DELETE /v1/workers/:id`: revokes the tokens, stops the runtime wherever it runs (and waits for
 * it), then removes the Worker and its tokens.
 */
export async function deleteWorker(ctx: AsyncContext, actor: Actor, workerId: string): Promise<void> {
  await stopWorker(
    ctx,
    actor,
    workerId,
    { state_reason: 'deleting', state_message: 'The Worker is being deleted' },
    (trx, row) => recordAudit(ctx.deps, trx, actor, 'worker.deleted', { type: 'worker', id: row.id }),
  )
  const provisioner = (
    await ctx.deps.db.selectFrom('worker').select('provisioner').where('id', '=', workerId).executeTakeFirst()
  )?.provisioner
  // What the runtime kept beside itself (a container's workspace volume) goes with the Worker.
  if (provisioner) await ctx.provisioners.get(provisioner)?.destroy?.(workerId)
  await ctx.deps.db.deleteFrom('worker').where('id', '=', workerId).where('org_id', '=', actor.orgId).execute()
}

/** `POST /v1/workers/:id/tokens`: a new token set (shown once); the runtime restarts with it. */
export async function issueWorkerTokens(
  ctx: AsyncContext,
  actor: Actor,
  workerId: string,
): Promise<{ worker: WorkerView; generation: number; tokens: RuntimeCredentials }> {
  const credentials = newCredentials()
  let generation = 0
  for (let attempt = 0; ; attempt++) {
    try {
      await ctx.deps.db.transaction().execute(async (trx) => {
        const row = await trx
          .selectFrom('worker')
          .selectAll()
          .where('id', '=', workerId)
          .where('org_id', '=', actor.orgId)
          .executeTakeFirst()
        if (!row) throw workerNotFound()
        generation = await installCredentials(ctx, trx, row, credentials)
        await recordAudit(ctx.deps, trx, actor, 'worker.tokens_issued', { type: 'worker', id: row.id }, { generation })
      })
      break
    } catch (error) {
      // Each retry means another rotation committed; the row is read again with its generation.
      if (!(error instanceof GenerationRace) || attempt >= 20) throw error
    }
  }
  // The old set must stop working before the answer: no runtime of an older generation may run.
  await retireRuntime(ctx, workerId, generation)
  ctx.jobs.wake()
  return { worker: await getWorker(ctx, actor.orgId, workerId), generation, tokens: credentials }
}

/** `DELETE /v1/workers/:id/tokens`: revokes the current set; the runtime is stopped (and waited for). */
export async function revokeWorkerTokens(ctx: AsyncContext, actor: Actor, workerId: string): Promise<void> {
  await stopWorker(
    ctx,
    actor,
    workerId,
    {
      state_reason: 'tokens_revoked',
      state_message: 'The token set was revoked; issue a new one to start the runtime again',
    },
    (trx, row) => recordAudit(ctx.deps, trx, actor, 'worker.tokens_revoked', { type: 'worker', id: row.id }),
  )
}

/** The Worker's tokens (values never shown), newest first. */
export async function listWorkerTokens(
  ctx: AsyncContext,
  orgId: string,
  workerId: string,
  query: { cursor?: string; limit: number },
): Promise<Page<WorkerTokenView>> {
  await workerRow(ctx, orgId, workerId)
  const q = ctx.deps.db.selectFrom('worker_token').selectAll().where('worker_id', '=', workerId)
  return keysetPage(q, {
    scope: `worker-tokens:${workerId}`,
    cursor: query.cursor,
    limit: query.limit,
    order: [{ column: 'id', field: 'id', direction: 'desc' }],
    map: (r) => ({
      id: r.id,
      scope: r.scope,
      generation: r.generation,
      createdAt: r.created_at,
      revokedAt: r.revoked_at,
    }),
  })
}
