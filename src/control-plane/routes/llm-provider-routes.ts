/**
 * `/v1/llm-provider-catalog` and `/v1/llm-providers`.
 * @module
 */
import * as v from 'valibot'
import { jsonResponse } from '../../core/errors.ts'
import { actorOf } from '../auth.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import {
  createProvider,
  deleteProvider,
  getProvider,
  listProviders,
  readCredential,
  updateProvider,
} from '../providers/llm-providers.ts'
import type { ProviderCatalog } from '../providers/provider-catalog.ts'
import { idParams } from '../wire/common.ts'
import {
  CatalogProviderItem,
  CatalogProviderPage,
  CreateLlmProviderBody,
  LlmProviderCredential,
  LlmProviderItem,
  LlmProviderPage,
  UpdateLlmProviderBody,
} from '../wire/llm-providers.ts'
import { accessRoutes } from './access-routes.ts'
import { route, type RouteContext } from './route.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

const ProviderParams = idParams(['llmProviderId', 'llm'])
const TAG = 'llm-providers'

/** Model-provider routes over a loaded catalog. */
export function llmProviderRoutes(ctx: RouteContext, catalog: ProviderCatalog) {
  return [
    route({
      method: 'GET',
      path: '/v1/llm-provider-catalog',
      operationId: 'listProviderCatalog',
      tags: [TAG],
      summary:
        'Known providers and models (embedded, or the configured catalog file); one page, nextCursor always null',
      auth: rules.org('llm_providers.read'),
      responses: { 200: CatalogProviderPage },
      handler: () => ({ items: [...catalog.providers], nextCursor: null }),
    }),
    route({
      method: 'GET',
      path: '/v1/llm-provider-catalog/:catalogProviderId',
      operationId: 'getCatalogProvider',
      tags: [TAG],
      summary: 'One catalog provider with its models',
      auth: rules.org('llm_providers.read'),
      params: v.object({ catalogProviderId: v.pipe(v.string(), v.maxLength(64)) }),
      responses: { 200: CatalogProviderItem },
      handler: ({ params }) => {
        const provider = catalog.find(params.catalogProviderId)
        if (!provider) throw controlPlaneError('catalog_provider_not_found', 'No such provider in the catalog')
        return { item: provider }
      },
    }),
    route({
      method: 'GET',
      path: '/v1/llm-providers',
      operationId: 'listLlmProviders',
      tags: [TAG],
      summary: 'Providers the caller can see (keys never included)',
      auth: rules.org('llm_providers.read'),
      query: v.object(pageQuery()),
      responses: { 200: LlmProviderPage },
      errors: [400],
      handler: ({ principal, query }) => listProviders(ctx.deps, actorOf(principal), query),
    }),
    route({
      method: 'POST',
      path: '/v1/llm-providers',
      operationId: 'createLlmProvider',
      tags: [TAG],
      summary: 'Create a provider from the catalog or a custom endpoint; the key is stored encrypted',
      description:
        "Exactly one of `catalogProviderId` (models must be that provider's catalog models) or `custom {baseUrl, api}`. The creator gets a manager grant. 409 `llm_provider_exists` for a name in use.",
      auth: rules.org('llm_providers.write'),
      body: CreateLlmProviderBody,
      responses: { 201: LlmProviderItem },
      errors: [409],
      handler: async ({ principal, body }) => ({
        item: await createProvider(ctx.deps, catalog, actorOf(principal), body),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/llm-providers/:llmProviderId',
      operationId: 'getLlmProvider',
      tags: [TAG],
      summary: 'One provider (`hasApiKey` instead of the key)',
      auth: rules.org('llm_providers.read'),
      params: ProviderParams,
      responses: { 200: LlmProviderItem },
      handler: async ({ principal, params }) => ({
        item: await getProvider(ctx.deps, actorOf(principal), params.llmProviderId),
      }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/llm-providers/:llmProviderId',
      operationId: 'updateLlmProvider',
      tags: [TAG],
      summary: 'Change a provider (manager); `apiKey: null` removes the key, omitting it keeps it',
      auth: rules.org('llm_providers.write'),
      params: ProviderParams,
      body: UpdateLlmProviderBody,
      responses: { 200: LlmProviderItem },
      errors: [409],
      handler: async ({ principal, params, body }) => ({
        item: await updateProvider(ctx.deps, catalog, actorOf(principal), params.llmProviderId, body),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/llm-providers/:llmProviderId',
      operationId: 'deleteLlmProvider',
      tags: [TAG],
      summary: 'Delete a provider and its grants (manager)',
      auth: rules.org('llm_providers.write'),
      params: ProviderParams,
      responses: { 204: { description: 'Deleted' } },
      handler: ({ principal, params }) => deleteProvider(ctx.deps, actorOf(principal), params.llmProviderId),
    }),
    route({
      method: 'GET',
      path: '/v1/llm-providers/:llmProviderId/credential',
      operationId: 'getLlmProviderCredential',
      tags: [TAG],
      summary: "The provider's API key, for holders of an explicit grant; every read is audited",
      description:
        '403 `credential_grant_required` without a grant naming the caller, one of their teams or the organization (an owner or admin role alone is not enough); 409 `no_api_key` when none is stored.',
      auth: rules.org('llm_providers.credential'),
      params: ProviderParams,
      responses: {
        200: {
          description: 'The key (never cached)',
          schema: LlmProviderCredential,
          headers: { 'Cache-Control': 'no-store' },
        },
      },
      errors: [409],
      // A secret: tell every cache between here and the caller not to keep it.
      handler: async ({ principal, params }) =>
        jsonResponse(
          { item: await readCredential(ctx.deps, actorOf(principal), params.llmProviderId) },
          { headers: { 'cache-control': 'no-store' } },
        ),
    }),
    ...accessRoutes(ctx, {
      type: 'llm_provider',
      base: '/v1/llm-providers/:llmProviderId',
      param: 'llmProviderId',
      prefix: 'llm',
      noun: 'LlmProvider',
      tag: TAG,
      read: 'llm_providers.read',
      write: 'llm_providers.write',
    }),
  ]
}
