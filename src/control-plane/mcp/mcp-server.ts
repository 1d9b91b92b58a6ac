/**
 * One MCP server per session (the SDK keeps per-session protocol state in it): the organization's
 * tools, and the skills delivered to the caller as resources. The caller travels with each request
 * as the transport's `authInfo`, so nothing here trusts state from when the session was opened;
 * resources come from the session's {@link DeliveryWatch}, which the change feed keeps current.
 * @module
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type ServerResult,
} from '@modelcontextprotocol/sdk/types.js'
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js'
import { VERSION } from '../../version.ts'
import type { Deps } from '../deps.ts'
import { MAX_SUBSCRIPTIONS, type DeliveryWatch } from './delivery-watch.ts'
import type { McpCaller } from './mcp-caller.ts'
import type { McpLimits } from './mcp-settings.ts'
import { callTool, listTools } from './mcp-tools.ts'
import {
  fileContent,
  findFile,
  INDEX_URI,
  indexJson,
  LIST_PAGE,
  parseFileUri,
  resourceEntries,
} from './skill-resources.ts'

/** What the server tells clients about itself. */
const INSTRUCTIONS =
  "This server is an organization's control plane. Its resources are the skills the organization delivers to you: read `skills://index` for the list with versions, then `skill://<name>/SKILL.md` and the files beside it. Use the `search` tool to find skills, agents, commands, skill hubs and plugins you can see, `get_object` to read one, and `list_organizations` for the organizations you belong to. Write tools appear only when your credential allows writing."

/** JSON-RPC code for an unknown resource (MCP specification, resources). */
const RESOURCE_NOT_FOUND = -32002

/** The `authInfo` the endpoint passes with each request, carrying the caller. */
export function authInfoFor(caller: McpCaller, token: string): AuthInfo {
  const p = caller.principal
  return {
    token,
    clientId: p.oauth?.clientId ?? p.apiKeyId ?? 'session',
    scopes: [...(p.oauth?.scopes ?? [])],
    extra: { caller },
  }
}

function callerFrom(extra: { authInfo?: AuthInfo }): McpCaller {
  const caller = extra.authInfo?.extra?.caller as McpCaller | undefined
  // The endpoint always passes one; a request without it is a defect, not a client error.
  if (!caller) throw new McpError(ErrorCode.InternalError, 'No caller')
  return caller
}

const notFound = (uri: string) => new McpError(RESOURCE_NOT_FOUND, 'Resource not found', { uri })

/** Builds the server for one session. */
export function createMcpServer(deps: Deps, watch: DeliveryWatch, limits: McpLimits): Server {
  const server = new Server(
    { name: 'service-server-control-plane', title: 'Organization control plane', version: VERSION },
    {
      capabilities: { tools: { listChanged: false }, resources: { subscribe: true, listChanged: true } },
      instructions: INSTRUCTIONS,
    },
  )
  server.setRequestHandler(ListToolsRequestSchema, (_request, extra) => ({ tools: listTools(callerFrom(extra)) }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const result = await callTool(deps, callerFrom(extra), request.params.name, request.params.arguments)
    if (!result) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`)
    return result as ServerResult
  })

  server.setRequestHandler(ListResourcesRequestSchema, async (request, extra) => {
    callerFrom(extra)
    const entries = resourceEntries(await watch.current())
    const cursor = request.params?.cursor
    const start = cursor === undefined ? 0 : /^\d{1,9}$/.test(cursor) ? Number(cursor) : -1
    if (start < 0 || start > entries.length) throw new McpError(ErrorCode.InvalidParams, 'Invalid cursor')
    const page = entries.slice(start, start + LIST_PAGE)
    const next = start + LIST_PAGE < entries.length ? String(start + LIST_PAGE) : undefined
    return { resources: page, ...(next ? { nextCursor: next } : {}) }
  })
  server.setRequestHandler(ListResourceTemplatesRequestSchema, (_request, extra) => {
    callerFrom(extra)
    return {
      resourceTemplates: [
        {
          uriTemplate: 'skill://{name}/{+path}',
          name: 'skill-file',
          title: 'A file of a delivered skill',
          description: '`SKILL.md` or a file beside it, for a skill delivered to you (see skills://index)',
        },
      ],
    }
  })
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    callerFrom(extra)
    const uri = request.params.uri
    const set = await watch.current()
    if (uri === INDEX_URI) return { contents: [{ uri, mimeType: 'application/json', text: indexJson(set) }] }
    const found = findFile(set, uri)
    if (!found) throw notFound(uri)
    if (found.file.size > limits.maxResourceBytes)
      throw new McpError(ErrorCode.InvalidRequest, `The file is larger than ${limits.maxResourceBytes} bytes`, {
        uri,
        size: found.file.size,
        limit: limits.maxResourceBytes,
      })
    return { contents: [fileContent(uri, found.file)] }
  })
  server.setRequestHandler(SubscribeRequestSchema, (request, extra) => {
    callerFrom(extra)
    const uri = request.params.uri
    // Any URI of ours may be subscribed, present or not: a skill delivered later announces itself.
    if (uri !== INDEX_URI && !parseFileUri(uri)) throw notFound(uri)
    if (!watch.subscriptions.has(uri) && watch.subscriptions.size >= MAX_SUBSCRIPTIONS)
      throw new McpError(ErrorCode.InvalidRequest, `At most ${MAX_SUBSCRIPTIONS} subscriptions per session`)
    watch.subscriptions.add(uri)
    return {}
  })
  server.setRequestHandler(UnsubscribeRequestSchema, (request, extra) => {
    callerFrom(extra)
    watch.subscriptions.delete(request.params.uri)
    return {}
  })
  return server
}
