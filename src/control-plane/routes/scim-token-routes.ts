/**
 * `/v1/org/scim-tokens`: the owner creates (token shown once), lists and revokes the tokens an
 * identity provider provisions the organization with (see `/scim/v2` and docs/scim.md).
 * @module
 */
import { actorOf } from '../auth.ts'
import { rules } from '../policy.ts'
import { createScimToken, listScimTokens, revokeScimToken } from '../scim/scim-tokens.ts'
import { idParams } from '../wire/common.ts'
import { CreatedScimToken, CreateScimTokenBody, ScimTokenList } from '../wire/scim.ts'
import { route, type RouteContext } from './route.ts'

/** SCIM token routes. */
export function scimTokenRoutes(ctx: RouteContext) {
  return [
    route({
      method: 'GET',
      path: '/v1/org/scim-tokens',
      operationId: 'listScimTokens',
      tags: ['scim'],
      summary: "The organization's SCIM tokens (never the tokens themselves)",
      auth: rules.org('scim_tokens.manage'),
      responses: { 200: ScimTokenList },
      handler: ({ principal }) => listScimTokens(ctx.deps, principal.org!.id),
    }),
    route({
      method: 'POST',
      path: '/v1/org/scim-tokens',
      operationId: 'createScimToken',
      tags: ['scim'],
      summary: 'Create a SCIM token for an identity provider',
      description:
        "Owner, with a session. The token is in this response only (it is stored as a hash): paste it into the identity provider's SCIM settings with the base URL `<server>/scim/v2`. It reaches the `/scim/v2` routes of this organization and nothing else. At most 20 per organization (409 `scim_token_limit`).",
      auth: rules.org('scim_tokens.manage'),
      body: CreateScimTokenBody,
      responses: { 201: CreatedScimToken },
      errors: [409],
      handler: ({ principal, body }) => createScimToken(ctx.deps, actorOf(principal), body),
    }),
    route({
      method: 'DELETE',
      path: '/v1/org/scim-tokens/:scimTokenId',
      operationId: 'revokeScimToken',
      tags: ['scim'],
      summary: 'Revoke a SCIM token',
      auth: rules.org('scim_tokens.manage'),
      params: idParams(['scimTokenId', 'sct']),
      responses: { 204: { description: 'Revoked; the next SCIM request with it is 401' } },
      handler: ({ principal, params }) => revokeScimToken(ctx.deps, actorOf(principal), params.scimTokenId),
    }),
  ]
}
