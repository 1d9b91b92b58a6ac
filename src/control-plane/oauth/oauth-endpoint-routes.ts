/**
 * The authorization server's OAuth endpoints: `POST /oauth/device_authorization` (RFC 8628),
 * `POST /oauth/token` (device code, refresh; RFC 6749 §5) and `POST /oauth/revoke` (RFC 7009).
 * Public routes with form-encoded bodies; answers and errors in the RFC shapes, never cached.
 * @module
 */
import { clientAddress } from '../identity/client-address.ts'
import { rules } from '../policy.ts'
import { route, type RouteContext } from '../routes/route.ts'
import { exchangeCode } from './authorization-code.ts'
import { pollDeviceToken, startDeviceAuthorization } from './device-grant.ts'
import { issuerOf } from './issuer.ts'
import { DEVICE_CODE_GRANT, resolveClient } from './oauth-clients.ts'
import { oauthEndpoint, oauthError, oauthJson } from './oauth-error.ts'
import { optional, readForm, required } from './oauth-form.ts'
import { parseScopes } from './oauth-scopes.ts'
import { refreshTokens, revokeByToken } from './oauth-tokens.ts'
import { DeviceAuthorizationResponse, formBody, oauthErrorResponse, TokenResponseBody } from './oauth-wire.ts'

const TAGS = ['oauth']

/** The grant types the token endpoint serves. */
export const TOKEN_GRANT_TYPES = ['authorization_code', DEVICE_CODE_GRANT, 'refresh_token'] as const

/** OAuth endpoint routes. */
export function oauthEndpointRoutes(ctx: RouteContext) {
  return [
    route({
      method: 'POST',
      path: '/oauth/device_authorization',
      operationId: 'oauthDeviceAuthorization',
      tags: TAGS,
      summary: 'Start a device sign-in (RFC 8628 §3.1)',
      description:
        'Form fields `client_id` (a built-in client: `opencode`, `service-cli`, `service-workspace`), optional `scope` (default `delivery:read`) and `resource`. The user code is valid for 10 minutes; the client polls `POST /oauth/token` every `interval` seconds. At most 20 pending requests per client address (429 `slow_down`).',
      auth: rules.public,
      // 401: an unknown client_id (`invalid_client`, RFC 6749 §5.2).
      errors: [401],
      body: formBody('`client_id`, optional `scope` and `resource`'),
      responses: {
        200: DeviceAuthorizationResponse,
        400: oauthErrorResponse('`invalid_request`, `invalid_scope`, `invalid_target`, `unauthorized_client`'),
        401: oauthErrorResponse('`invalid_client`: unknown client_id'),
        413: oauthErrorResponse('The body is too large'),
        429: oauthErrorResponse('`slow_down`: too many pending requests from this address'),
      },
      handler: ({ request }) =>
        oauthEndpoint(async () => {
          const form = await readForm(request)
          return oauthJson(
            await startDeviceAuthorization(ctx.deps, {
              clientId: required(form, 'client_id', 128),
              scope: optional(form, 'scope'),
              resource: optional(form, 'resource'),
              address: clientAddress(request, ctx.trustProxy),
              issuer: issuerOf(request, ctx),
            }),
          )
        }),
    }),
    route({
      method: 'POST',
      path: '/oauth/token',
      operationId: 'oauthToken',
      tags: TAGS,
      summary: 'Exchange a grant for tokens (RFC 6749 §5, RFC 8628 §3.4)',
      description: `Form field \`grant_type\`: \`authorization_code\` with \`code\`, \`redirect_uri\`, \`client_id\`, \`code_verifier\` (PKCE S256) and optional \`resource\` (must equal the authorization request's; a code is exchanged once, and a second exchange revokes what the first issued); \`${DEVICE_CODE_GRANT}\` with \`device_code\` and \`client_id\` (answers \`authorization_pending\`, \`slow_down\` when polled faster than the interval, which then grows by 5 s, \`access_denied\`, \`expired_token\`), or \`refresh_token\` with \`refresh_token\`, \`client_id\` and optional narrower \`scope\`. Refresh tokens rotate: each is exchanged once; presenting an exchanged one again revokes the whole grant (every token issued under it). The answer adds \`organization\` (the one chosen at approval) to RFC 6749's fields.`,
      auth: rules.public,
      // 401: an unknown client_id (`invalid_client`, RFC 6749 §5.2).
      errors: [401],
      body: formBody("`grant_type` and the grant's fields"),
      responses: {
        200: TokenResponseBody,
        400: oauthErrorResponse(
          '`invalid_request`, `invalid_grant`, `unsupported_grant_type`, `invalid_scope`, `authorization_pending`, `slow_down`, `access_denied`, `expired_token`',
        ),
        401: oauthErrorResponse('`invalid_client`: unknown client_id'),
        413: oauthErrorResponse('The body is too large'),
      },
      handler: ({ request }) =>
        oauthEndpoint(async () => {
          const form = await readForm(request)
          const grantType = required(form, 'grant_type', 128)
          const clientId = required(form, 'client_id', 128)
          if (grantType === 'authorization_code') {
            const client = await resolveClient(ctx.deps, clientId)
            if (!client.grantTypes.includes('authorization_code'))
              throw oauthError('unauthorized_client', 'This client may not use the authorization code grant')
            return oauthJson(
              await exchangeCode(ctx.deps, {
                client,
                code: required(form, 'code', 256),
                redirectUri: required(form, 'redirect_uri', 512),
                codeVerifier: required(form, 'code_verifier', 256),
                resource: optional(form, 'resource'),
              }),
            )
          }
          if (grantType === DEVICE_CODE_GRANT)
            return oauthJson(await pollDeviceToken(ctx.deps, clientId, required(form, 'device_code', 256)))
          if (grantType === 'refresh_token') {
            const client = await resolveClient(ctx.deps, clientId)
            if (!client.grantTypes.includes('refresh_token'))
              throw oauthError('unauthorized_client', 'This client may not refresh')
            const scope = optional(form, 'scope')
            const scopes = scope === undefined ? null : parseScopes(scope)
            if (scopes === null && scope !== undefined) throw oauthError('invalid_scope', 'Unknown scope')
            return oauthJson(await refreshTokens(ctx.deps, client, required(form, 'refresh_token', 256), scopes))
          }
          throw oauthError('unsupported_grant_type', `grant_type must be one of: ${TOKEN_GRANT_TYPES.join(', ')}`)
        }),
    }),
    route({
      method: 'POST',
      path: '/oauth/revoke',
      operationId: 'oauthRevoke',
      tags: TAGS,
      summary: 'Revoke a token (RFC 7009)',
      description:
        'Form fields `token`, `client_id`, optional `token_type_hint`. Revoking either token of a grant ends the whole grant. An unknown token, or one of another client, is answered 200 too (RFC 7009 §2.2).',
      auth: rules.public,
      // 401: an unknown client_id (`invalid_client`, RFC 6749 §5.2).
      errors: [401],
      body: formBody('`token`, `client_id`, optional `token_type_hint`'),
      responses: {
        200: { description: 'Revoked, or nothing to revoke' },
        400: oauthErrorResponse('`invalid_request`'),
        401: oauthErrorResponse('`invalid_client`: unknown client_id'),
        413: oauthErrorResponse('The body is too large'),
      },
      handler: ({ request }) =>
        oauthEndpoint(async () => {
          const form = await readForm(request)
          const client = await resolveClient(ctx.deps, required(form, 'client_id', 128))
          await revokeByToken(ctx.deps, client, required(form, 'token', 1024), optional(form, 'token_type_hint', 64))
          return new Response(null, { status: 200, headers: { 'cache-control': 'no-store' } })
        }),
    }),
  ]
}
