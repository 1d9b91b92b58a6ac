/**
 * `POST/GET/DELETE /mcp`: the organization as a Model Context Protocol server (Streamable HTTP
 * transport), and its OAuth protected-resource metadata (RFC 9728). Authentication is the control
 * plane's own (API key, session token, or an OAuth access token bound to this endpoint with RFC
 * 8707 `resource`), so every tool and resource obeys the same grants as the HTTP routes.
 *
 * The MCP SDK (and the zod and ajv it brings) is imported on the first request to `/mcp`: a
 * control plane that never serves MCP neither starts slower nor holds it in memory.
 * @module
 */
import * as v from 'valibot'
import { ApiError } from '../../core/errors.ts'
import { lazyModule } from '../../core/lazy-module.ts'
import type { AnyRoute } from '../../core/route.ts'
import type { ControlPlanePrincipal } from '../auth.ts'
import type { ChangeSubscriptions } from '../events/change-feed.ts'
import { issuerOf } from '../oauth/issuer.ts'
import { OAUTH_SCOPES } from '../oauth/oauth-scopes.ts'
import { rules, type ControlPlaneRule } from '../policy.ts'
import { route, type RouteContext } from '../routes/route.ts'
import type { McpEndpoint } from './mcp-endpoint.ts'
import type { McpLimits } from './mcp-settings.ts'

const TAG = 'mcp'
const DESCRIPTION =
  "Model Context Protocol, Streamable HTTP transport (protocol 2025-11-25 and earlier versions the SDK negotiates). `initialize` (a POST without `Mcp-Session-Id`) opens a session and answers its id in `Mcp-Session-Id`; send it on every later request. Requests are JSON-RPC bodies answered as JSON; `GET` opens the session's event stream for server messages (resume with `Last-Event-ID`); `DELETE` ends the session. A session is bound to the credential that opened it (another credential gets 404 as if it did not exist). See docs/control-plane-api.md (MCP) for tools, resources and limits."

/** The path of the metadata document for `/mcp` (RFC 9728 §3.1: the resource's path appended). */
const METADATA_PATH = '/.well-known/oauth-protected-resource/mcp'

const ProtectedResourceMetadata = v.pipe(
  v.object({
    resource: v.pipe(v.string(), v.description('The MCP endpoint: the `resource` an access token must be bound to')),
    authorization_servers: v.array(v.string()),
    scopes_supported: v.array(v.string()),
    bearer_methods_supported: v.array(v.string()),
    resource_name: v.string(),
    resource_documentation: v.string(),
  }),
  v.title('ProtectedResourceMetadata'),
)

/** The scopes an MCP client asks for unless told otherwise. */
const DEFAULT_SCOPE = 'delivery:read catalog:read'

const HEADERS = {
  'mcp-session-id': 'The session id (answered by initialize; required on every later request)',
}

/** The MCP routes and the endpoint's shutdown. */
export function mcpRoutes(
  ctx: RouteContext,
  limits: McpLimits,
  changes: ChangeSubscriptions,
): { routes: AnyRoute<ControlPlaneRule, ControlPlanePrincipal>[]; close(): void } {
  let loaded: McpEndpoint | null = null
  const endpoint = lazyModule(async () => {
    const { McpEndpoint } = await import('./mcp-endpoint.ts')
    return (loaded = new McpEndpoint(ctx.deps, limits, changes))
  })
  /** The endpoint's URL: what an OAuth token's `resource` must name. */
  const resourceOf = (request: Request) => `${issuerOf(request, ctx)}/mcp`
  // `scope` is what a client asks for by default (MCP clients prefer it to `scopes_supported`):
  // read-only, so writing is something a person grants on purpose.
  const challenge = (request: Request, error?: string) =>
    `Bearer ${error ? `error="${error}", ` : ''}resource_metadata="${issuerOf(request, ctx)}${METADATA_PATH}", scope="${DEFAULT_SCOPE}"`
  const handler = async ({ request, principal }: { request: Request; principal: ControlPlanePrincipal }) => {
    // An OAuth token must have been issued for this endpoint (RFC 8707), not for another resource.
    if (principal.oauth && principal.oauth.resource?.replace(/\/+$/, '') !== resourceOf(request)) {
      throw new ApiError(
        401,
        'unauthorized',
        'This OAuth access token was not issued for this MCP endpoint (resource)',
        {
          headers: { 'www-authenticate': challenge(request, 'invalid_token') },
        },
      )
    }
    return (await endpoint()).handle(request, principal)
  }
  const auth: ControlPlaneRule = {
    kind: 'org',
    permission: 'delivery.read',
    challenge: (request) => challenge(request),
    apiKeyAsBearer: true,
  }
  const metadata = ({ request }: { request: Request }) => {
    const issuer = issuerOf(request, ctx)
    return {
      resource: `${issuer}/mcp`,
      authorization_servers: [issuer],
      scopes_supported: [...OAUTH_SCOPES],
      bearer_methods_supported: ['header'],
      resource_name: 'Organization control plane (MCP)',
      resource_documentation: 'https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization',
    }
  }
  return {
    routes: [
      route({
        method: 'GET',
        path: METADATA_PATH,
        operationId: 'getMcpProtectedResourceMetadata',
        tags: [TAG],
        summary: 'OAuth protected-resource metadata of the MCP endpoint (RFC 9728)',
        description:
          'Names the MCP endpoint as the resource and this server as its authorization server (`GET /.well-known/oauth-authorization-server`), with the scopes it accepts. A 401 from `/mcp` points here in `WWW-Authenticate: Bearer resource_metadata="…"`.',
        auth: rules.public,
        responses: { 200: ProtectedResourceMetadata },
        handler: metadata,
      }),
      route({
        method: 'GET',
        path: '/.well-known/oauth-protected-resource',
        operationId: 'getProtectedResourceMetadata',
        tags: [TAG],
        summary: 'OAuth protected-resource metadata at the root (the same document as for /mcp)',
        description: 'For clients that look at the root first: the MCP endpoint is the only OAuth-protected resource.',
        auth: rules.public,
        responses: { 200: ProtectedResourceMetadata },
        handler: metadata,
      }),
      route({
        method: 'POST',
        path: '/mcp',
        operationId: 'mcpPost',
        tags: [TAG],
        summary: 'Send a JSON-RPC message to the MCP server (initialize opens a session)',
        description: DESCRIPTION,
        auth,
        body: {
          raw: true,
          contentType: 'application/json',
          description: 'A JSON-RPC request, notification or response (or a batch); at most `mcp.maxBodyBytes`',
          required: true,
        },
        responses: {
          200: { description: 'The JSON-RPC response', headers: HEADERS },
          202: { description: 'A notification or response was accepted' },
        },
        errors: [400, 404, 406, 413, 415],
        handler,
      }),
      route({
        method: 'GET',
        path: '/mcp',
        operationId: 'mcpStream',
        tags: [TAG],
        summary: "The session's event stream of server messages (SSE, resumable with Last-Event-ID)",
        description: DESCRIPTION,
        auth,
        responses: {
          200: {
            description: 'Server-Sent Events carrying JSON-RPC messages',
            contentType: 'text/event-stream',
            headers: HEADERS,
          },
        },
        errors: [400, 404, 406, 409],
        handler,
      }),
      route({
        method: 'DELETE',
        path: '/mcp',
        operationId: 'mcpDelete',
        tags: [TAG],
        summary: 'End the MCP session',
        description: DESCRIPTION,
        auth,
        responses: { 200: { description: 'The session is closed' } },
        errors: [400, 404],
        handler,
      }),
    ],
    close: () => loaded?.close(),
  }
}
