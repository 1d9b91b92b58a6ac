/**
 * Routes of the authorization code grant for MCP clients: metadata (RFC 8414), dynamic client
 * registration (RFC 7591), `GET /oauth/authorize` (to the console's consent page), and the
 * session-only consent routes the console calls. The token exchange is in the token endpoint.
 * @module
 */
import { assertSessionMayAct } from '../admission/admission-policy.ts'
import { readCapped } from '../../core/validation.ts'
import { clientAddress } from '../identity/client-address.ts'
import { rules } from '../policy.ts'
import { route, type RouteContext } from '../routes/route.ts'
import { idParams } from '../wire/common.ts'
import {
  approveAuthorization,
  consentUrl,
  denyAuthorization,
  describeAuthorization,
  RedirectError,
  startAuthorization,
} from './authorization-code.ts'
import { registerClient } from './client-registration.ts'
import { issuerOf } from './issuer.ts'
import { oauthEndpoint, oauthError, oauthJson } from './oauth-error.ts'
import { MAX_FORM_BYTES } from './oauth-form.ts'
import { authorizationServerMetadata } from './oauth-metadata.ts'
import {
  ApproveAuthorizationBody,
  AuthorizationDecision,
  AuthorizationRequestBody,
  AuthorizationServerMetadata,
  oauthErrorResponse,
  RegisteredClientBody,
} from './oauth-wire.ts'

/** Authorization code routes. */
export function authorizationRoutes(ctx: RouteContext) {
  const redirect = (location: string) =>
    new Response(null, {
      status: 302,
      headers: { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' },
    })

  return [
    route({
      method: 'GET',
      path: '/.well-known/oauth-authorization-server',
      operationId: 'oauthAuthorizationServerMetadata',
      tags: ['oauth'],
      summary: 'Authorization server metadata (RFC 8414)',
      auth: rules.public,
      responses: { 200: AuthorizationServerMetadata },
      handler: ({ request }) => authorizationServerMetadata(issuerOf(request, ctx)),
    }),
    route({
      method: 'POST',
      path: '/oauth/register',
      operationId: 'oauthRegisterClient',
      tags: ['oauth'],
      summary: 'Register a public client (RFC 7591)',
      description:
        'JSON body `{redirect_uris, client_name?, grant_types?, response_types?, token_endpoint_auth_method?: "none", scope?}`. Public clients only; redirect URIs must be https, or http on localhost, 127.0.0.1 or [::1], without a fragment (`invalid_redirect_uri`); other metadata errors are `invalid_client_metadata`. At most 20 registrations per client address an hour (429 `temporarily_unavailable`).',
      auth: rules.public,
      body: {
        raw: true,
        contentType: 'application/json',
        description: 'Client metadata (RFC 7591 §2)',
        required: true,
      },
      responses: {
        201: RegisteredClientBody,
        400: oauthErrorResponse('`invalid_redirect_uri`, `invalid_client_metadata`'),
        413: oauthErrorResponse('The body is too large'),
        429: oauthErrorResponse('`temporarily_unavailable`: too many registrations from this address'),
      },
      handler: ({ request }) =>
        oauthEndpoint(async () => {
          const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
          if (type !== 'application/json')
            throw oauthError('invalid_client_metadata', 'Send the metadata as application/json')
          let text: string
          try {
            text = await readCapped(request, MAX_FORM_BYTES)
          } catch {
            throw oauthError('invalid_client_metadata', `The body exceeds ${MAX_FORM_BYTES} bytes`, 413)
          }
          let body: unknown
          try {
            body = JSON.parse(text)
          } catch {
            throw oauthError('invalid_client_metadata', 'The body is not JSON')
          }
          return oauthJson(await registerClient(ctx.deps, body, clientAddress(request, ctx.trustProxy)), 201)
        }),
    }),
    route({
      method: 'GET',
      path: '/oauth/authorize',
      operationId: 'oauthAuthorize',
      // Its own tag: it answers only redirects, which the role matrix (2xx per caller) does not model.
      tags: ['oauth-authorize'],
      summary: 'Start an authorization code request (RFC 6749 §4.1, PKCE S256 only)',
      description:
        'Query: `response_type=code`, `client_id`, `redirect_uri` (exactly one the client registered), `code_challenge` with `code_challenge_method=S256`, optional `scope`, `state` and `resource` (RFC 8707). Redirects (302) to the console consent page `/console/#consent=<id>`. An unknown client or redirect URI is answered here (400 or 401), never redirected; every other error goes back to the redirect URI as `error`, `error_description`, `state` and `iss`.',
      auth: rules.public,
      errors: [401],
      responses: {
        302: {
          description: 'To the consent page, or back to the client with an error',
          headers: { Location: 'Where to go' },
        },
        400: oauthErrorResponse('`invalid_request`: missing client or redirect URI not registered'),
        401: oauthErrorResponse('`invalid_client`: unknown client_id'),
      },
      handler: ({ request, url }) =>
        oauthEndpoint(async () => {
          const issuer = issuerOf(request, ctx)
          try {
            const started = await startAuthorization(ctx.deps, url.searchParams, issuer)
            return redirect(consentUrl(issuer, started.id))
          } catch (error) {
            if (error instanceof RedirectError) return redirect(error.redirectTo)
            throw error
          }
        }),
    }),
    route({
      method: 'GET',
      path: '/v1/oauth/authorizations/:authorizationId',
      operationId: 'getAuthorizationRequest',
      tags: ['oauth-consent'],
      summary: 'What a pending authorization request asks for (the consent page)',
      description:
        "Session only. The client, its redirect URI, the scopes, the resource, and the organization an approval would bind the token to (the session's active one). 404 once decided or after 10 minutes.",
      auth: rules.session,
      params: idParams(['authorizationId', 'oaz']),
      responses: { 200: AuthorizationRequestBody },
      handler: async ({ principal, params }) => ({
        ...(await describeAuthorization(ctx.deps, params.authorizationId)),
        organization: principal.org ? { id: principal.org.id, name: principal.org.name } : null,
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/oauth/authorizations/:authorizationId/approve',
      operationId: 'approveAuthorizationRequest',
      tags: ['oauth-consent'],
      summary: 'Approve an authorization request for one of your organizations',
      description:
        "Session only. `orgId` defaults to the session's organization; one the caller is not in is 404. Answers where the browser goes next: the client's redirect URI with `code`, `state` and `iss`. The code is valid for 60 seconds and once.",
      auth: rules.session,
      params: idParams(['authorizationId', 'oaz']),
      body: ApproveAuthorizationBody,
      responses: { 200: AuthorizationDecision },
      handler: async ({ request, principal, params, body }) => {
        const orgId = body.orgId ?? principal.org?.id ?? null
        await assertSessionMayAct(ctx.deps.db, orgId, principal.session?.ssoOrgId ?? null)
        const approved = await approveAuthorization(
          ctx.deps,
          params.authorizationId,
          principal.user!.id,
          orgId,
          issuerOf(request, ctx),
        )
        return { redirectTo: approved.redirectTo }
      },
    }),
    route({
      method: 'POST',
      path: '/v1/oauth/authorizations/:authorizationId/deny',
      operationId: 'denyAuthorizationRequest',
      tags: ['oauth-consent'],
      summary: 'Deny an authorization request',
      description: "Session only. Answers the client's redirect URI with `error=access_denied`.",
      auth: rules.session,
      params: idParams(['authorizationId', 'oaz']),
      responses: { 200: AuthorizationDecision },
      handler: async ({ request, principal, params }) => ({
        redirectTo: await denyAuthorization(
          ctx.deps,
          params.authorizationId,
          principal.user!.id,
          issuerOf(request, ctx),
        ),
      }),
    }),
  ]
}
