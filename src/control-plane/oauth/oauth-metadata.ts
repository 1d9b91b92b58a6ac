/**
 * The authorization server metadata document (RFC 8414), which MCP clients read first: where each
 * endpoint is and what this server supports (public clients, PKCE S256 only, resource indicators).
 * @module
 */
import { DEVICE_CODE_GRANT } from './oauth-clients.ts'
import { OAUTH_SCOPES } from './oauth-scopes.ts'

/** The metadata for an issuer URL. */
export function authorizationServerMetadata(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    registration_endpoint: `${issuer}/oauth/register`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    device_authorization_endpoint: `${issuer}/oauth/device_authorization`,
    scopes_supported: [...OAUTH_SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token', DEVICE_CODE_GRANT],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${issuer}/openapi.json`,
  }
}
