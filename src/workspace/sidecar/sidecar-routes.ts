/**
 * Route declarations of the sidecar feature: the two proxy mounts and the engine reload.
 *
 * The proxy routes take any valid token (`rules.viewer`); what each scope may send is decided per
 * method and path in `proxy-policy.ts`, because it depends on the forwarded path.
 * @module
 */
import * as v from 'valibot'
import type { AnyRoute, HttpMethod } from '../../core/route.ts'
import { routeFactory } from '../../core/route.ts'
import { rules, type Principal, type WorkspaceRule } from '../auth.ts'
import type { SidecarService } from './sidecar-service.ts'

const route = routeFactory<WorkspaceRule, Principal>()
const METHODS: HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']

const WorkspaceParams = v.object({ id: v.pipe(v.string(), v.minLength(1)) })
const MountParams = v.object({ id: v.pipe(v.string(), v.minLength(1)), path: v.string() })

/** `POST /workspace/:id/engine/reload` response. */
export const ReloadResponseSchema = v.object({ ok: v.literal(true), workspaceId: v.string(), durationMs: v.number() })

const PASSED_THROUGH = {
  description:
    "The sidecar's answer: status, body and content type passed through unchanged (event streams unbuffered, with a heartbeat frame when the sidecar is quiet). Hop-by-hop, content-encoding, content-length, cookie and CORS headers of the sidecar are not forwarded.",
  contentType: '*/*',
}

const RAW_BODY = {
  raw: true as const,
  contentType: '*/*',
  description: 'Forwarded to the sidecar as a stream, unchanged.',
}

const PROXY_DESCRIPTION =
  "Forwards to the workspace's OpenCode-style sidecar. The client's Authorization, X-Service-* and cookie headers are removed and the sidecar's own credentials injected; " +
  'every `directory` query value and `x-opencode-directory` header is replaced by the workspace directory; sessions of other directories answer 404 `session_not_found`; redirects are refused (502 `sidecar_redirect_refused`). ' +
  'Viewer tokens may only GET/HEAD; `/global/*` writes need an owner token; a read-only server answers 403 `read_only` to anything but GET/HEAD. ' +
  'Failures: 400 `sidecar_unconfigured`, 502 `sidecar_unreachable` (details.cause), 502 `sidecar_auth_failed`, 499 `request_aborted`; sidecar 5xx answers are passed through with their body.'

function restAfter(pathname: string, marker: string): string {
  const index = pathname.indexOf(marker)
  return index < 0 ? '/' : pathname.slice(index + marker.length - 1) || '/'
}

/** The sidecar routes, wired to `service`. */
export function sidecarRoutes(service: SidecarService): AnyRoute<WorkspaceRule, Principal>[] {
  const routes: AnyRoute<WorkspaceRule, Principal>[] = []
  for (const method of METHODS) {
    const lower = method.charAt(0) + method.slice(1).toLowerCase()
    routes.push(
      route({
        method,
        path: '/sidecar/:path+',
        operationId: `sidecarProxy${lower}`,
        summary: `Proxy ${method} to the first workspace's sidecar`,
        description: PROXY_DESCRIPTION,
        tags: ['sidecar'],
        auth: rules.viewer,
        ...(method === 'GET' || method === 'DELETE' ? {} : { body: RAW_BODY }),
        responses: { 200: PASSED_THROUGH },
        errors: [400, 403, 404, 499, 502, 504],
        handler: ({ request, url, principal, requestId, log }) =>
          service.proxy({
            workspaceId: service.defaultWorkspaceId ?? '',
            request,
            rest: restAfter(url.pathname, '/sidecar/'),
            search: url.search,
            principal,
            requestId,
            log,
          }),
      }),
      route({
        method,
        path: '/w/:id/sidecar/:path+',
        operationId: `workspaceSidecarProxy${lower}`,
        summary: `Proxy ${method} to this workspace's sidecar`,
        description: PROXY_DESCRIPTION,
        tags: ['sidecar'],
        auth: rules.viewer,
        params: MountParams,
        ...(method === 'GET' || method === 'DELETE' ? {} : { body: RAW_BODY }),
        responses: { 200: PASSED_THROUGH },
        errors: [400, 403, 404, 499, 502, 504],
        handler: ({ request, url, params, principal, requestId, log }) =>
          service.proxy({
            workspaceId: params.id,
            request,
            rest: restAfter(url.pathname.replace(/^\/w\/[^/]+/, ''), '/sidecar/'),
            search: url.search,
            principal,
            requestId,
            log,
          }),
      }),
    )
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
