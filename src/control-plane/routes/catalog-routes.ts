/**
 * Every catalog family (config objects, plugins, marketplaces, skills and skill hubs, model
 * providers) in one list, so the composition root registers them with one line.
 * @module
 */
import { configObjectRoutes } from './config-object-routes.ts'
import type { RouteContext } from './route.ts'

/** Catalog routes. */
export function catalogRoutes(ctx: RouteContext) {
  return [
    ...configObjectRoutes(ctx),
  ]
}
