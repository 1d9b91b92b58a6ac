/**
 * Route declarations of the sidecar feature: one declaration per allow-listed OpenCode route on each
 * of the two mounts (generated from `route-table.ts`, so the document names every route the proxy
 * forwards with the role it enforces), served as subroutes of a host-only fallback for everything
 * else (one per method and mount), and the engine reload.
 * @module
 */
import * as v from 'valibot'
import type { AnyRoute, HttpMethod, ResponseSpec } from '../../core/route.ts'
import { routeFactory } from '../../core/route.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import { SIDECAR_ROUTES, type SidecarRouteEntry } from './route-table.ts'
import type { SidecarService } from './sidecar-service.ts'
import { TICKET_RULE, UNLISTED_RULE } from './sidecar-auth.ts'

const route = routeFactory<WorkspaceRule, Principal>()
const METHODS: HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']

const WorkspaceParams = v.object({ id: v.pipe(v.string(), v.minLength(1)) })

/** `POST /workspace/:id/engine/reload` response. */
export const ReloadResponseSchema = v.object({ ok: v.literal(true), workspaceId: v.string(), durationMs: v.number() })

const PASSED_THROUGH: ResponseSpec = {
  description:
    "Pass-through: the sidecar's answer with any status, its body and its media type, unchanged. Hop-by-hop, content-encoding, content-length, cookie and CORS headers of the sidecar are not forwarded.",
  contentType: '*/*',
}

const EVENT_STREAM: ResponseSpec = {
  description:
    "The sidecar's Server-Sent Events, unbuffered, with a heartbeat frame when the sidecar is quiet. Other statuses are passed through.",
  contentType: 'text/event-stream',
  // OpenCode's bus events: `{type, properties}`, the properties depending on the type (its own document lists them).
  schema: v.looseObject({
    type: v.pipe(v.string(), v.description('OpenCode event type, e.g. `message.updated`, `session.idle`')),
    properties: v.optional(v.record(v.string(), v.unknown())),
  }),
}

const UPGRADED: ResponseSpec = {
  description:
    'Switching Protocols: the connection becomes a WebSocket relayed to the sidecar frame by frame (close codes and reasons relayed both ways). Browsers authenticate with `?ticket=` from the connect-token route; others with their bearer token. A request without `Upgrade: websocket` is 426 `websocket_upgrade_required`.',
  contentType: 'application/octet-stream',
}

const RAW_BODY = {
  raw: true as const,
  contentType: '*/*',
  description:
    'Forwarded to the sidecar as a stream; routes whose row pins body fields read it as JSON (at most 1 MiB) and forward the pinned form.',
}

const ROLE_RULE = { viewer: rules.viewer, collaborator: rules.collaborator, owner: rules.host } as const

/** OpenCode's operationId as a camelCase suffix: `session.prompt_async` → `SessionPromptAsync`. */
function operationSuffix(operationId: string): string {
  return operationId
    .split(/[._-]/)
    .filter(Boolean)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('')
}

/** What the document says about one row: role, state, pinning and governance. */
export function describeEntry(entry: SidecarRouteEntry): string {
  const parts = [
    `OpenCode \`${entry.operationId}\`. Role: ${entry.role === 'owner' ? 'owner or host token' : `${entry.role} or above`}.`,
    entry.changesState ? 'Changes state.' : 'Read-only.',
    `Pinning: ${pinningOf(entry)}.`,
  ]
  if (entry.governance === 'approval') parts.push('Goes through the host approval gate and is audited.')
  if (entry.governance === 'audited') parts.push('Audited.')
  if (entry.note) parts.push(`(${entry.note}.)`)
  return parts.join(' ')
}

/** A short statement of how the row is pinned to the workspace (also used by the docs table). */
export function pinningOf(entry: SidecarRouteEntry): string {
  const out = ['directory']
  if (entry.path.includes(':sessionID')) out.push('session in path')
  if (entry.queryPaths) out.push(`query ${entry.queryPaths.join(', ')} inside workspace`)
  if (entry.tailPath) out.push('file path inside workspace')
  if (entry.filterResults) out.push('results outside workspace removed')
  if (entry.secrets) out.push('MCP secrets masked below owner')
  const body = entry.body
  if (body?.sessions) out.push(`body ${body.sessions.join(', ')} own session`)
  if (body?.directories) out.push(`body ${body.directories.join(', ')} set to workspace`)
  if (body?.paths) out.push(`body ${body.paths.join(', ')} inside workspace`)
  if (body?.drop) out.push(`body ${body.drop.join(', ')} removed`)
  return out.join('; ')
}

const FALLBACK_DESCRIPTION =
  'Any OpenCode route not on the allow-list (see docs/sidecar-proxy.md) is forwarded only for the host (an owner token or the host token); everyone else gets 403 `sidecar_route_not_allowed`. An allow-listed route reached by another spelling (letter case) lands here too. The directory is pinned as for every proxied request.'

function restAfter(pathname: string, marker: string): string {
  const index = pathname.indexOf(marker)
  return index < 0 ? '/' : pathname.slice(index + marker.length - 1) || '/'
}

/** The sidecar routes, wired to `service`. */
export function sidecarRoutes(service: SidecarService): AnyRoute<WorkspaceRule, Principal>[] {
  const routes: AnyRoute<WorkspaceRule, Principal>[] = []
  const mounts = [
    { prefix: '/sidecar', op: 'sidecar', label: "the first workspace's sidecar" },
    { prefix: '/w/:id/sidecar', op: 'workspaceSidecar', label: "this workspace's sidecar" },
  ]
  for (const mount of mounts) {
    const workspaceOf = (params: Record<string, string>) =>
      mount.prefix === '/sidecar' ? (service.defaultWorkspaceId ?? '') : params.id!
    const proxy =
      (entry: SidecarRouteEntry | null): AnyRoute<WorkspaceRule, Principal>['handler'] =>
      ({ request, url, params, principal, requestId, log }) =>
        service.proxy({
          workspaceId: workspaceOf(params as Record<string, string>),
          request,
          rest: restAfter(url.pathname.replace(/^\/w\/[^/]+/, ''), '/sidecar/'),
          search: url.search,
          principal,
          requestId,
          log,
          entry,
        })
    const rowRoute = (entry: SidecarRouteEntry): AnyRoute<WorkspaceRule, Principal> => {
      const hasBody = entry.method !== 'GET' && entry.method !== 'DELETE'
      const responses: Record<number, ResponseSpec> =
        entry.kind === 'websocket'
          ? { 101: UPGRADED }
          : entry.kind === 'sse'
            ? { 200: EVENT_STREAM }
            : { 200: PASSED_THROUGH }
      return route({
        method: entry.method,
        path: mount.prefix + entry.path,
        operationId: mount.op + operationSuffix(entry.operationId),
        summary: `${entry.method} ${entry.path} on ${mount.label}`,
        description: describeEntry(entry),
        tags: ['sidecar'],
        auth: entry.kind === 'websocket' ? TICKET_RULE : ROLE_RULE[entry.role],
        ...(hasBody ? { body: RAW_BODY } : {}),
        responses,
        errors:
          entry.kind === 'websocket'
            ? [400, 404, 426, 429, 502]
            : // A row that pins body fields reads the body as JSON, at most 1 MiB (request-pins.ts).
              [400, 404, 499, 502, 504, ...(hasBody && entry.body ? [413] : [])],
        handler: proxy(entry),
      })
    }
    // One route per method and mount: the allow-list's rows are its subroutes, declared when the
    // first request reaches it (or the document is built), not at every start (bench/README.md).
    for (const method of METHODS) {
      const lower = method.charAt(0) + method.slice(1).toLowerCase()
      let rows: AnyRoute<WorkspaceRule, Principal>[] | undefined
      routes.push(
        route({
          method,
          path: `${mount.prefix}/:path+`,
          operationId: `${mount.op}Unlisted${lower}`,
          summary: `Proxy an unlisted ${method} to ${mount.label} (host only)`,
          description: FALLBACK_DESCRIPTION,
          tags: ['sidecar'],
          auth: UNLISTED_RULE,
          ...(method === 'GET' || method === 'DELETE' ? {} : { body: RAW_BODY }),
          responses: { 200: PASSED_THROUGH },
          errors: [400, 404, 499, 502, 504],
          subroutes: () => (rows ??= SIDECAR_ROUTES.filter((entry) => entry.method === method).map(rowRoute)),
          handler: proxy(null),
        }),
      )
    }
  }
  routes.push(
    route({
      method: 'POST',
      path: '/workspace/:id/engine/reload',
      operationId: 'reloadWorkspaceEngine',
      summary: "Reload the workspace's sidecar instance",
      description:
        "Calls the sidecar's `POST /instance/dispose` for the workspace directory so configuration, skills, commands and MCP entries are re-read. Audited. 504 `sidecar_reload_timeout` when it takes longer than the configured reload timeout.",
      tags: ['sidecar'],
      auth: rules.collaborator,
      params: WorkspaceParams,
      responses: { 200: ReloadResponseSchema },
      errors: [400, 404, 499, 502, 504],
      handler: ({ params, principal }) => service.reload(params.id, 'manual', principal),
    }),
  )
  return routes
}
