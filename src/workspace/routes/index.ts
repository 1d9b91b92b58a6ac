/**
 * Every route of the workspace surface's control layer, in one list for the router, the OpenAPI
 * document and the authorization-matrix test.
 * @module
 */
import type { AnyRoute } from '../../core/route.ts'
import type { StreamRegistry } from '../../core/sse.ts'
import type { Principal, WorkspaceRule } from '../access/auth.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { approvalRoutes } from './approval-routes.ts'
import { commandRoutes } from './command-routes.ts'
import { configRoutes } from './config-routes.ts'
import { discoveryRoutes } from './discovery-routes.ts'
import type { SidecarReporter } from '../sidecar/sidecar-status-schema.ts'
import { eventRoutes } from './event-routes.ts'
import { mcpRoutes } from './mcp-routes.ts'
import { pluginRoutes } from './plugin-routes.ts'
import { skillRoutes } from './skill-routes.ts'
import { tokenRoutes } from './token-routes.ts'

/** The control-layer routes, built over the services. */
export function controlRoutes(
  s: WorkspaceServices,
  streams: StreamRegistry,
  startedAt: number,
  sidecar?: SidecarReporter,
): AnyRoute<WorkspaceRule, Principal>[] {
  return [
    ...discoveryRoutes(s, startedAt, sidecar),
    ...tokenRoutes(s),
    ...approvalRoutes(s, streams),
    ...configRoutes(s),
    ...eventRoutes(s, streams),
    ...pluginRoutes(s),
    ...skillRoutes(s),
    ...mcpRoutes(s),
    ...commandRoutes(s),
  ]
}
