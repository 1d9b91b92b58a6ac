/**
 * Model providers an organization shares: a catalog provider (its API style and base URL come
 * from the catalog, its models must be catalog models) or a custom endpoint. The API key is
 * sealed with the server's secret box, bound to the provider id, and never returned by reads
 * (`hasApiKey` says whether one is set). `GET …/credential` returns it only to a caller holding
 * an explicit grant on the provider (owners and admins too need one), and audits every read.
 * @module
 */
import { newId } from '../../core/ids.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import { explicitRole, dropGrants, requireRole, grantCreator } from '../catalog/access-grants.ts'
import { visibleCondition } from '../catalog/visibility-sql.ts'
import { invalidSource } from '../catalog/config-source.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import type { ControlPlaneDb } from '../schema.ts'
import type { ApiStyle } from './catalog-provider.ts'
import type { ProviderCatalog } from './provider-catalog.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** A model offered through a provider. */
export interface ProviderModel {
  id: string
  name: string
}

/** A provider as the API shows it (never the key). */
export interface LlmProviderView {
  id: string
  name: string
  source: 'catalog' | 'custom'
  catalogProviderId: string | null
  baseUrl: string | null
  api: ApiStyle
  models: ProviderModel[]
  hasApiKey: boolean
  createdByMemberId: string | null
  createdAt: string
  updatedAt: string
}

/** Create body (validated by the wire schema). */
export interface ProviderInput {
  name: string
  catalogProviderId?: string
  custom?: { baseUrl: string; api: ApiStyle }
  models: Array<string | { id: string; name?: string }>
  apiKey?: string | null
}

type Row = ControlPlaneDb['llm_provider']

function view(row: Row): LlmProviderView {
  return {
    id: row.id,
    name: row.name,
    source: row.source as 'catalog' | 'custom',
    catalogProviderId: row.catalog_provider_id,
    baseUrl: row.base_url,
    api: row.api as ApiStyle,
    models: JSON.parse(row.models) as ProviderModel[],
    hasApiKey: row.api_key_sealed !== null,
    createdByMemberId: row.created_by_member_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

const nameTaken = () => controlPlaneError('llm_provider_exists', 'A model provider with that name already exists')

/** Resolves the endpoint and models of an input against the catalog; 422 naming the field. */
function shape(
  catalog: ProviderCatalog,
  input: Pick<ProviderInput, 'catalogProviderId' | 'custom' | 'models'>,
): {
  source: 'catalog' | 'custom'
  catalogProviderId: string | null
  baseUrl: string | null
  api: ApiStyle
  models: ProviderModel[]
} {
  const ids = input.models.map((m) => (typeof m === 'string' ? { id: m } : m))
  if (new Set(ids.map((m) => m.id)).size !== ids.length)
    throw invalidSource('models', 'model ids must be unique', 'duplicate_model')
  if (input.catalogProviderId !== undefined) {
    const provider = catalog.find(input.catalogProviderId)
    if (!provider)
      throw invalidSource(
        'catalogProviderId',
        `no provider "${input.catalogProviderId}" in the catalog (GET /v1/llm-provider-catalog)`,
        'unknown_catalog_provider',
      )
    const models = ids.map((m, i) => {
      const known = provider.models.find((c) => c.id === m.id)
      if (!known)
        throw invalidSource(
          `models.${i}`,
          `"${m.id}" is not a ${provider.name} model in the catalog`,
          'unknown_catalog_model',
        )
      return { id: known.id, name: m.name ?? known.name }
    })
    return { source: 'catalog', catalogProviderId: provider.id, baseUrl: provider.baseUrl, api: provider.api, models }
  }
  return {
    source: 'custom',
    catalogProviderId: null,
    baseUrl: input.custom!.baseUrl,
    api: input.custom!.api,
    models: ids.map((m) => ({ id: m.id, name: m.name ?? m.id })),
  }
}

/** Providers the caller can see, in creation order. */
export function listProviders(
  deps: Deps,
  actor: Actor,
  page: { cursor?: string; limit: number },
): Promise<Page<LlmProviderView>> {
  const query = deps.db
    .selectFrom('llm_provider as p')
    .selectAll()
    .where('p.org_id', '=', actor.orgId)
    .where(visibleCondition(deps.db, actor, 'llm_provider', 'p.id'))
  return keysetPage(query, {
    scope: 'llm-providers',
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'p.id', field: 'id', direction: 'asc' }],
    map: view,
  })
}

/** One visible provider. */
export async function getProvider(deps: Deps, actor: Actor, id: string): Promise<LlmProviderView> {
  await requireRole(deps.db, actor, 'llm_provider', id, 'viewer')
  return view(await deps.db.selectFrom('llm_provider').selectAll().where('id', '=', id).executeTakeFirstOrThrow())
}

/** Creates a provider; its key is sealed; the creator gets a manager grant (and so may read the key). */
export async function createProvider(
  deps: Deps,
  catalog: ProviderCatalog,
  actor: Actor,
  input: ProviderInput,
): Promise<LlmProviderView> {
  const endpoint = shape(catalog, input)
  const id = newId('llm')
  const now = isoAt(deps)
  try {
    await deps.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('llm_provider')
        .values({
          id,
          org_id: actor.orgId,
          name: input.name,
          source: endpoint.source,
          catalog_provider_id: endpoint.catalogProviderId,
          base_url: endpoint.baseUrl,
          api: endpoint.api,
          models: JSON.stringify(endpoint.models),
          api_key_sealed: input.apiKey ? deps.secrets.seal(input.apiKey, id) : null,
          created_by_member_id: actor.memberId,
          created_at: now,
          updated_at: now,
        })
        .execute()
      await grantCreator(deps, trx, actor, 'llm_provider', id)
      await recordAudit(
        deps,
        trx,
        actor,
        'llm_provider.created',
        { type: 'llm_provider', id },
        { source: endpoint.source, hasApiKey: Boolean(input.apiKey) },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken()
    throw error
  }
  return getProvider(deps, actor, id)
}

/** Changes a provider (manager). `apiKey`: a string replaces it, null removes it, omitted keeps it. */
export async function updateProvider(
  deps: Deps,
  catalog: ProviderCatalog,
  actor: Actor,
  id: string,
  input: Partial<ProviderInput>,
): Promise<LlmProviderView> {
  try {
    await deps.db.transaction().execute(async (trx) => {
      await requireRole(trx, actor, 'llm_provider', id, 'manager')
      const row = await trx.selectFrom('llm_provider').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
      const changes: Partial<Row> = { updated_at: isoAt(deps) }
      if (input.name !== undefined) changes.name = input.name
      if (input.models !== undefined || input.catalogProviderId !== undefined || input.custom !== undefined) {
        const current = view(row)
        const endpoint = shape(catalog, {
          catalogProviderId: input.custom
            ? undefined
            : (input.catalogProviderId ?? current.catalogProviderId ?? undefined),
          custom:
            input.custom ??
            (input.catalogProviderId === undefined && current.source === 'custom'
              ? { baseUrl: current.baseUrl!, api: current.api }
              : undefined),
          models: input.models ?? current.models,
        })
        Object.assign(changes, {
          source: endpoint.source,
          catalog_provider_id: endpoint.catalogProviderId,
          base_url: endpoint.baseUrl,
          api: endpoint.api,
          models: JSON.stringify(endpoint.models),
        })
      }
      if (input.apiKey !== undefined)
        changes.api_key_sealed = input.apiKey === null ? null : deps.secrets.seal(input.apiKey, id)
      await trx.updateTable('llm_provider').set(changes).where('id', '=', id).execute()
      await recordAudit(
        deps,
        trx,
        actor,
        'llm_provider.updated',
        { type: 'llm_provider', id },
        { fields: Object.keys(input).sort().join(',') },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken()
    throw error
  }
  return getProvider(deps, actor, id)
}

/** Deletes a provider and its grants (manager). */
export async function deleteProvider(deps: Deps, actor: Actor, id: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, 'llm_provider', id, 'manager')
    await dropGrants(trx, 'llm_provider', id)
    await trx.deleteFrom('llm_provider').where('id', '=', id).execute()
    await recordAudit(deps, trx, actor, 'llm_provider.deleted', { type: 'llm_provider', id })
  })
}

/** What a runtime needs to call the provider. */
export interface ProviderCredential {
  llmProviderId: string
  api: ApiStyle
  baseUrl: string | null
  apiKey: string
}

/**
 * The decrypted key, for a caller with an explicit grant on the provider (any role); the read is
 * audited. 404 when the provider is not visible; 403 `credential_grant_required` without an
 * explicit grant; 409 `no_api_key` when none is stored.
 */
export async function readCredential(deps: Deps, actor: Actor, id: string): Promise<ProviderCredential> {
  return await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, 'llm_provider', id, 'viewer')
    if (!(await explicitRole(trx, actor, 'llm_provider', id))) {
      throw controlPlaneError(
        'credential_grant_required',
        'Reading a provider key needs an explicit grant on the provider (for you, one of your teams, or the organization)',
        { details: { reason: 'explicit_grant_required' } },
      )
    }
    const row = await trx.selectFrom('llm_provider').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
    if (!row.api_key_sealed) throw controlPlaneError('no_api_key', 'The provider has no API key stored')
    const apiKey = deps.secrets.open(row.api_key_sealed, id)
    await recordAudit(deps, trx, actor, 'llm_provider.credential_read', { type: 'llm_provider', id })
    return { llmProviderId: id, api: row.api as ApiStyle, baseUrl: row.base_url, apiKey }
  })
}
