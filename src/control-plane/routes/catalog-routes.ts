/**
 * Every catalog family (config objects, plugins, marketplaces, skills and skill hubs, model
 * providers) in one list, so the composition root registers them with one line.
 * @module
 */
import type { ProviderCatalog } from '../providers/provider-catalog.ts'
import { configObjectRoutes } from './config-object-routes.ts'
import { llmProviderRoutes } from './llm-provider-routes.ts'
import { pluginRoutes } from './plugin-routes.ts'
import { skillRoutes } from './skill-routes.ts'
import type { RouteContext } from './route.ts'

/** Catalog routes. */
export function catalogRoutes(ctx: RouteContext, providerCatalog: ProviderCatalog) {
  return [
    ...configObjectRoutes(ctx),
    ...pluginRoutes(ctx),
    ...skillRoutes(ctx),
    ...llmProviderRoutes(ctx, providerCatalog),
  ]
}
