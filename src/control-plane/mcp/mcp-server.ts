/**
 * One MCP server per session (the SDK keeps per-session protocol state in it): the organization's
 * tools, answered for the caller of each request. The caller travels with the request as the
 * transport's `authInfo`, so nothing here trusts state from when the session was opened.
 * @module
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type ServerResult,
} from '@modelcontextprotocol/sdk/types.js'
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js'
import { VERSION } from '../../version.ts'
import type { Deps } from '../deps.ts'
import type { McpCaller } from './mcp-caller.ts'
import { callTool, listTools } from './mcp-tools.ts'

/** What the server tells clients about itself. */
const INSTRUCTIONS =
  "This server is an organization's control plane. Use `search` to find skills, agents, commands, skill hubs and plugins you can see, `get_object` to read one, and `list_organizations` for the organizations you belong to. Write tools appear only when your credential allows writing."

/** The `authInfo` the endpoint passes with each request, carrying the caller. */
export function authInfoFor(caller: McpCaller, token: string): AuthInfo {
  return { token, clientId: caller.principal.apiKeyId ?? 'session', scopes: [], extra: { caller } }
}

function callerFrom(extra: { authInfo?: AuthInfo }): McpCaller {
  const caller = extra.authInfo?.extra?.caller as McpCaller | undefined
  // The endpoint always passes one; a request without it is a defect, not a client error.
  if (!caller) throw new McpError(ErrorCode.InternalError, 'No caller')
  return caller
}

/** Builds the server for one session. */
export function createMcpServer(deps: Deps): Server {
  const server = new Server(
    { name: 'service-server-control-plane', title: 'Organization control plane', version: VERSION },
    { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
  )
  server.setRequestHandler(ListToolsRequestSchema, (_request, extra) => ({ tools: listTools(callerFrom(extra)) }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const result = await callTool(deps, callerFrom(extra), request.params.name, request.params.arguments)
    if (!result) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`)
    return result as ServerResult
  })
  return server
}
