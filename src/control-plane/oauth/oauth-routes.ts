/**
 * Every route of the authorization server, for the composition root.
 * @module
 */
import type { RouteContext } from '../routes/route.ts'
import { authorizationRoutes } from './authorization-routes.ts'
import { deviceRoutes } from './device-routes.ts'
import { oauthEndpointRoutes } from './oauth-endpoint-routes.ts'
import { tokenRoutes } from './token-routes.ts'

/** The authorization server's routes. */
export function oauthRoutes(ctx: RouteContext) {
  return [...authorizationRoutes(ctx), ...oauthEndpointRoutes(ctx), ...deviceRoutes(ctx), ...tokenRoutes(ctx)]
}
