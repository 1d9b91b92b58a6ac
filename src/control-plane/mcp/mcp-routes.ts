/**
 * `POST/GET/DELETE /mcp`: the organization as a Model Context Protocol server (Streamable HTTP
 * transport). Authentication is the control plane's own (API key, session token), so every tool
 * obeys the same grants as the HTTP routes.
 *
 * The MCP SDK (and the zod and ajv it brings) is imported on the first request to `/mcp`: a
 * control plane that never serves MCP neither starts slower nor holds it in memory.
 * @module
 */
import { lazyModule } from '../../core/lazy-module.ts'
import type { AnyRoute } from '../../core/route.ts'
import type { ControlPlanePrincipal } from '../auth.ts'
import type { ChangeSubscriptions } from '../events/change-feed.ts'
import { rules, type ControlPlaneRule } from '../policy.ts'
import { route, type RouteContext } from '../routes/route.ts'
import type { McpEndpoint } from './mcp-endpoint.ts'
import type { McpLimits } from './mcp-settings.ts'

const TAG = 'mcp'
const DESCRIPTION =
  "Model Context Protocol, Streamable HTTP transport (protocol 2025-11-25 and earlier versions the SDK negotiates). `initialize` (a POST without `Mcp-Session-Id`) opens a session and answers its id in `Mcp-Session-Id`; send it on every later request. Requests are JSON-RPC bodies answered as JSON; `GET` opens the session's event stream for server messages (resume with `Last-Event-ID`); `DELETE` ends the session. A session is bound to the credential that opened it (another credential gets 404 as if it did not exist). See docs/control-plane-api.md (MCP) for tools, resources and limits."

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
  const handler = async ({ request, principal }: { request: Request; principal: ControlPlanePrincipal }) =>
    (await endpoint()).handle(request, principal)
  const auth = rules.org('config_objects.read')
  return {
    routes: [
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
