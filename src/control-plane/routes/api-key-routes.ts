/**
 * `/v1/api-keys`: list, create (key shown once), revoke.
 * @module
 */
import * as v from 'valibot'
import { actorOf } from '../auth.ts'
import { createApiKey, listApiKeys, revokeApiKey } from '../admin/api-keys.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import { ApiKeyPage, CreateApiKeyBody, CreatedApiKey } from '../wire/admin.ts'
import { idParams } from '../wire/common.ts'
import { route, type RouteContext } from './route.ts'

/** API key routes. */
export function apiKeyRoutes(ctx: RouteContext) {
  return [
    route({
      method: 'GET',
      path: '/v1/api-keys',
      operationId: 'listApiKeys',
      tags: ['api-keys'],
      summary: "The organization's API keys (never the keys themselves)",
      auth: rules.org('api_keys.read'),
      query: v.object(pageQuery()),
      responses: { 200: ApiKeyPage },
      errors: [400],
      handler: ({ principal, query }) => listApiKeys(ctx.deps, principal.org!.id, query),
    }),
    route({
      method: 'POST',
      path: '/v1/api-keys',
      operationId: 'createApiKey',
      tags: ['api-keys'],
      summary: 'Create an API key acting as the caller in this organization',
      description:
        "Session only. The plaintext key is in this response only (send it as `x-api-key`). The key acts with the creator's role and is disabled when that role changes or the member is removed. `expiresAt` is optional and must be in the future.",
      auth: rules.org('api_keys.manage'),
      body: CreateApiKeyBody,
      responses: { 201: CreatedApiKey },
      handler: ({ principal, body }) => createApiKey(ctx.deps, actorOf(principal), body),
    }),
    route({
      method: 'DELETE',
      path: '/v1/api-keys/:apiKeyId',
      operationId: 'revokeApiKey',
      tags: ['api-keys'],
      summary: 'Revoke an API key',
      auth: rules.org('api_keys.manage'),
      params: idParams(['apiKeyId', 'key']),
      responses: { 204: { description: 'Revoked; the key no longer works' } },
      handler: ({ principal, params }) => revokeApiKey(ctx.deps, actorOf(principal), params.apiKeyId),
    }),
  ]
}
