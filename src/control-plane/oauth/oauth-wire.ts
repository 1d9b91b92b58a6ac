/**
 * Wire schemas of the authorization server: the RFC-shaped answers of `/oauth/*` and the JSON
 * of the console's `/v1/oauth/*` and token lists.
 * @module
 */
import * as v from 'valibot'
import { idOf, pageOf, Timestamp } from '../wire/common.ts'
import { OAUTH_SCOPES } from './oauth-scopes.ts'

/** `{error, error_description}` (RFC 6749 §5.2). */
export const OAuthErrorBody = v.pipe(
  v.object({ error: v.string(), error_description: v.optional(v.string()) }),
  v.title('OAuthError'),
  v.description('RFC 6749 §5.2 error: `error` is a stable code, `error_description` is for people'),
)

/** The form body of the OAuth endpoints, as documented (the handler reads it itself). */
export function formBody(description: string) {
  return { raw: true as const, contentType: 'application/x-www-form-urlencoded', description, required: true }
}

/** An OAuth error response spec for a status. */
export function oauthErrorResponse(description: string) {
  return { description, schema: OAuthErrorBody, headers: { 'Cache-Control': 'no-store' } }
}

/** RFC 8628 §3.2. */
export const DeviceAuthorizationResponse = v.pipe(
  v.strictObject({
    device_code: v.string(),
    user_code: v.pipe(v.string(), v.regex(/^[B-DF-HJ-NP-TV-XZ]{4}-[B-DF-HJ-NP-TV-XZ]{4}$/)),
    verification_uri: v.pipe(v.string(), v.url()),
    verification_uri_complete: v.pipe(v.string(), v.url()),
    expires_in: v.number(),
    interval: v.number(),
  }),
  v.title('DeviceAuthorizationResponse'),
)

/** RFC 6749 §5.1, plus the organization the token acts in. */
export const TokenResponseBody = v.pipe(
  v.strictObject({
    access_token: v.pipe(v.string(), v.startsWith('oat_')),
    token_type: v.literal('Bearer'),
    expires_in: v.number(),
    refresh_token: v.pipe(v.string(), v.startsWith('ort_')),
    scope: v.string(),
    organization: v.strictObject({ id: idOf('org'), name: v.string() }),
  }),
  v.title('TokenResponse'),
)

/** What the console shows about a pending device sign-in. */
export const DeviceRequestBody = v.pipe(
  v.strictObject({
    userCode: v.string(),
    client: v.strictObject({ id: v.string(), name: v.string() }),
    scopes: v.array(v.strictObject({ scope: v.picklist(OAUTH_SCOPES), description: v.string() })),
    resource: v.nullable(v.string()),
    expiresAt: Timestamp,
    organization: v.nullable(v.strictObject({ id: idOf('org'), name: v.string() })),
  }),
  v.title('DeviceRequest'),
)

/** A user code as typed (separators and case do not matter). */
const UserCodeField = v.pipe(
  v.string(),
  v.minLength(1),
  v.maxLength(32),
  v.description('The code the client shows, e.g. BCDF-GHJK'),
)

/** `POST /v1/oauth/device/approve`. */
export const ApproveDeviceBody = v.strictObject({
  userCode: UserCodeField,
  orgId: v.optional(
    v.pipe(idOf('org'), v.description("The organization the token acts in; default the session's active one")),
  ),
})

/** `POST /v1/oauth/device/deny`. */
export const DenyDeviceBody = v.strictObject({ userCode: UserCodeField })

/** `GET /v1/oauth/device` query. */
export const DeviceQuery = v.object({ userCode: UserCodeField })

/** The answer of approve. */
export const ApprovedDevice = v.pipe(
  v.strictObject({
    approved: v.literal(true),
    organization: v.strictObject({ id: idOf('org'), name: v.string() }),
    client: v.strictObject({ id: v.string(), name: v.string() }),
  }),
  v.title('ApprovedDevice'),
)

/** An OAuth grant ("token") as lists show it. */
export const OAuthTokenItem = v.pipe(
  v.strictObject({
    id: idOf('ogr'),
    clientId: v.string(),
    clientName: v.string(),
    memberId: idOf('mem'),
    userId: idOf('usr'),
    scopes: v.array(v.picklist(OAUTH_SCOPES)),
    resource: v.nullable(v.string()),
    status: v.picklist(['active', 'expired', 'revoked']),
    revokedReason: v.nullable(
      v.picklist(['member', 'admin', 'member_removed', 'refresh_reuse', 'code_reuse', 'client', 'sso_required']),
    ),
    createdAt: Timestamp,
    expiresAt: Timestamp,
    lastUsedAt: v.nullable(Timestamp),
    revokedAt: v.nullable(Timestamp),
  }),
  v.title('OAuthToken'),
)

/** A page of OAuth tokens. */
export const OAuthTokenPage = pageOf(OAuthTokenItem, 'OAuthTokenPage')

/** RFC 8414 metadata. */
export const AuthorizationServerMetadata = v.pipe(
  v.strictObject({
    issuer: v.string(),
    authorization_endpoint: v.string(),
    token_endpoint: v.string(),
    registration_endpoint: v.string(),
    revocation_endpoint: v.string(),
    device_authorization_endpoint: v.string(),
    scopes_supported: v.array(v.string()),
    response_types_supported: v.array(v.string()),
    response_modes_supported: v.array(v.string()),
    grant_types_supported: v.array(v.string()),
    token_endpoint_auth_methods_supported: v.array(v.string()),
    revocation_endpoint_auth_methods_supported: v.array(v.string()),
    code_challenge_methods_supported: v.array(v.string()),
    authorization_response_iss_parameter_supported: v.boolean(),
    service_documentation: v.string(),
  }),
  v.title('AuthorizationServerMetadata'),
)

/** RFC 7591 §3.2.1. */
export const RegisteredClientBody = v.pipe(
  v.strictObject({
    client_id: v.string(),
    client_id_issued_at: v.number(),
    client_name: v.string(),
    redirect_uris: v.array(v.string()),
    grant_types: v.array(v.string()),
    response_types: v.array(v.string()),
    token_endpoint_auth_method: v.literal('none'),
    scope: v.string(),
  }),
  v.title('RegisteredClient'),
)

/** What the consent page shows about an authorization request. */
export const AuthorizationRequestBody = v.pipe(
  v.strictObject({
    id: idOf('oaz'),
    client: v.strictObject({ id: v.string(), name: v.string() }),
    redirectUri: v.string(),
    scopes: v.array(v.strictObject({ scope: v.picklist(OAUTH_SCOPES), description: v.string() })),
    resource: v.nullable(v.string()),
    expiresAt: Timestamp,
    organization: v.nullable(v.strictObject({ id: idOf('org'), name: v.string() })),
  }),
  v.title('AuthorizationRequest'),
)

/** `POST /v1/oauth/authorizations/:id/approve`. */
export const ApproveAuthorizationBody = v.strictObject({
  orgId: v.optional(
    v.pipe(idOf('org'), v.description("The organization the token acts in; default the session's active one")),
  ),
})

/** Where the console sends the browser after a decision. */
export const AuthorizationDecision = v.pipe(
  v.strictObject({ redirectTo: v.pipe(v.string(), v.url()) }),
  v.title('AuthorizationDecision'),
)
