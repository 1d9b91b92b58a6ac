/**
 * OAuth tokens as people manage them: a member lists and revokes their own; admins list and
 * revoke the organization's. One entry per grant (an approval), which keeps its id across
 * refreshes; tokens themselves are never shown again after issuance.
 * @module
 */
import * as v from 'valibot'
import { actorOf } from '../auth.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import { route, type RouteContext } from '../routes/route.ts'
import { idParams } from '../wire/common.ts'
import { listOAuthTokens, revokeOAuthToken } from './oauth-token-lists.ts'
import { OAuthTokenPage } from './oauth-wire.ts'

/** OAuth token list and revocation routes. */
export function tokenRoutes(ctx: RouteContext) {
  return [
    route({
      method: 'GET',
      path: '/v1/me/oauth-tokens',
      operationId: 'listMyOAuthTokens',
      tags: ['oauth-tokens'],
      summary: 'Your OAuth tokens in this organization (device sign-ins and MCP clients), newest first',
      description: '`expiresAt` is when the token stops working unless refreshed; long-lived tokens show it here.',
      auth: rules.org('oauth_tokens.own'),
      query: v.object(pageQuery()),
      responses: { 200: OAuthTokenPage },
      errors: [400],
      handler: ({ principal, query }) =>
        listOAuthTokens(ctx.deps, { orgId: principal.org!.id, memberId: principal.org!.memberId }, query),
    }),
    route({
      method: 'DELETE',
      path: '/v1/me/oauth-tokens/:tokenId',
      operationId: 'revokeMyOAuthToken',
      tags: ['oauth-tokens'],
      summary: 'Revoke one of your OAuth tokens',
      description: 'Its access and refresh tokens stop working at once. 404 for a token that is not yours.',
      auth: rules.org('oauth_tokens.own'),
      params: idParams(['tokenId', 'ogr']),
      responses: { 204: { description: 'Revoked' } },
      handler: ({ principal, params }) => revokeOAuthToken(ctx.deps, actorOf(principal), params.tokenId, true),
    }),
    route({
      method: 'GET',
      path: '/v1/oauth-tokens',
      operationId: 'listOAuthTokens',
      tags: ['oauth-tokens'],
      summary: "The organization's OAuth tokens, newest first",
      auth: rules.org('oauth_tokens.read'),
      query: v.object(pageQuery()),
      responses: { 200: OAuthTokenPage },
      errors: [400],
      handler: ({ principal, query }) => listOAuthTokens(ctx.deps, { orgId: principal.org!.id }, query),
    }),
    route({
      method: 'DELETE',
      path: '/v1/oauth-tokens/:tokenId',
      operationId: 'revokeOAuthToken',
      tags: ['oauth-tokens'],
      summary: "Revoke any of the organization's OAuth tokens",
      auth: rules.org('oauth_tokens.manage'),
      params: idParams(['tokenId', 'ogr']),
      responses: { 204: { description: 'Revoked' } },
      handler: ({ principal, params }) => revokeOAuthToken(ctx.deps, actorOf(principal), params.tokenId, false),
    }),
  ]
}
