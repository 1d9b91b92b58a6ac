/**
 * What a Worker receives: its own list of skill hubs, plugins and model providers, set as a
 * whole by `PUT /v1/workers/:id/delivery` (workers.manage). Model providers reach Workers only,
 * and their keys only through the Worker's own delivery answer (see `delivered-set.ts`).
 * @module
 */
import { recordAudit, type Actor } from '../admin/audit.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import type { ApiStyle } from '../providers/catalog-provider.ts'
import type { Db } from '../schema.ts'

/** A Worker's delivery as the API shows it. */
export interface WorkerDeliveryView {
  workerId: string
  hubIds: string[]
  pluginIds: string[]
  llmProviderIds: string[]
}

/** At most this many of each kind per Worker. */
export const MAX_WORKER_DELIVERY = 200

const KINDS = { hub: 'skill_hub', plugin: 'plugin', llm_provider: 'llm_provider' } as const
type Kind = keyof typeof KINDS

const missingIds = (field: string, ids: string[]) => ({ details: { field, ids } })
const NOT_FOUND: Record<Kind, (ids: string[]) => Error> = {
  hub: (ids) =>
    controlPlaneError('skill_hub_not_found', `No such skill hub: ${ids.join(', ')}`, missingIds('hubIds', ids)),
  plugin: (ids) =>
    controlPlaneError('plugin_not_found', `No such plugin: ${ids.join(', ')}`, missingIds('pluginIds', ids)),
  llm_provider: (ids) =>
    controlPlaneError(
      'llm_provider_not_found',
      `No such model provider: ${ids.join(', ')}`,
      missingIds('llmProviderIds', ids),
    ),
}

async function requireWorker(db: Db, orgId: string, workerId: string): Promise<void> {
  const row = await db
    .selectFrom('worker')
    .select('id')
    .where('id', '=', workerId)
    .where('org_id', '=', orgId)
    .executeTakeFirst()
  if (!row) throw controlPlaneError('worker_not_found', 'Worker not found')
}

/** The Worker's delivery; targets deleted since are left out. */
export async function getWorkerDelivery(deps: Deps, orgId: string, workerId: string): Promise<WorkerDeliveryView> {
  await requireWorker(deps.db, orgId, workerId)
  const ids = async (kind: Kind) =>
    (
      await deps.db
        .selectFrom('worker_delivery as d')
        .innerJoin(`${KINDS[kind]} as t` as 'plugin as t', 't.id', 'd.target_id')
        .select('d.target_id')
        .where('d.worker_id', '=', workerId)
        .where('d.kind', '=', kind)
        .orderBy('d.target_id')
        .execute()
    ).map((r) => r.target_id)
  return {
    workerId,
    hubIds: await ids('hub'),
    pluginIds: await ids('plugin'),
    llmProviderIds: await ids('llm_provider'),
  }
}

/**
 * Replaces the Worker's delivery. Every id must name a hub, plugin or provider of the
 * organization (404 naming which otherwise); nothing is written unless all are.
 */
export async function setWorkerDelivery(
  deps: Deps,
  actor: Actor,
  workerId: string,
  input: { hubIds: string[]; pluginIds: string[]; llmProviderIds: string[] },
): Promise<WorkerDeliveryView> {
  const wanted: Array<[Kind, string[]]> = [
    ['hub', [...new Set(input.hubIds)]],
    ['plugin', [...new Set(input.pluginIds)]],
    ['llm_provider', [...new Set(input.llmProviderIds)]],
  ]
  await deps.db.transaction().execute(async (trx) => {
    await requireWorker(trx, actor.orgId, workerId)
    for (const [kind, ids] of wanted) {
      if (ids.length === 0) continue
      const found = await trx
        .selectFrom(`${KINDS[kind]} as t` as 'plugin as t')
        .select('t.id')
        .where('t.org_id', '=', actor.orgId)
        .where('t.id', 'in', ids)
        .execute()
      const known = new Set(found.map((r) => r.id))
      const missing = ids.filter((id) => !known.has(id))
      if (missing.length) throw NOT_FOUND[kind](missing)
    }
    await trx.deleteFrom('worker_delivery').where('worker_id', '=', workerId).execute()
    const now = isoAt(deps)
    const rows = wanted.flatMap(([kind, ids]) =>
      ids.map((id) => ({ worker_id: workerId, org_id: actor.orgId, kind, target_id: id, created_at: now })),
    )
    if (rows.length) await trx.insertInto('worker_delivery').values(rows).execute()
    await recordAudit(
      deps,
      trx,
      actor,
      'worker.delivery_updated',
      { type: 'worker', id: workerId },
      { hubs: wanted[0]![1].length, plugins: wanted[1]![1].length, llmProviders: wanted[2]![1].length },
    )
  })
  return getWorkerDelivery(deps, actor.orgId, workerId)
}

/** The `npm` package OpenCode loads for each API style. */
const NPM: Record<ApiStyle, string> = {
  openai: '@ai-sdk/openai',
  anthropic: '@ai-sdk/anthropic',
  google: '@ai-sdk/google',
  'openai-compatible': '@ai-sdk/openai-compatible',
  mistral: '@ai-sdk/mistral',
  bedrock: '@ai-sdk/amazon-bedrock',
  'azure-openai': '@ai-sdk/azure',
}

/**
 * The Worker's model providers as `opencode.json` fragments, keys opened: for the Worker's own
 * delivery answer only, never for anything a person reads.
 */
export async function workerProviders(
  deps: Deps,
  orgId: string,
  workerId: string,
): Promise<Array<{ id: string; name: string; updatedAt: string; config: Record<string, unknown> }>> {
  const rows = await deps.db
    .selectFrom('worker_delivery as d')
    .innerJoin('llm_provider as p', 'p.id', 'd.target_id')
    .selectAll('p')
    .where('d.worker_id', '=', workerId)
    .where('d.kind', '=', 'llm_provider')
    .where('p.org_id', '=', orgId)
    .orderBy('p.id')
    .execute()
  return rows.map((row) => {
    const models = JSON.parse(row.models) as Array<{ id: string; name: string }>
    const options: Record<string, string> = {}
    if (row.base_url) options.baseURL = row.base_url
    if (row.api_key_sealed) options.apiKey = deps.secrets.open(row.api_key_sealed, row.id)
    return {
      id: row.id,
      name: row.name,
      updatedAt: row.updated_at,
      config: {
        provider: {
          [row.name]: {
            npm: NPM[row.api as ApiStyle] ?? NPM['openai-compatible'],
            name: row.name,
            options,
            models: Object.fromEntries(models.map((m) => [m.id, { name: m.name }])),
          },
        },
      },
    }
  })
}
