/**
 * `/v1/plugins` and `/v1/marketplaces`: CRUD, archive/restore, memberships, resolved views and
 * access. Both kinds share the container domain module.
 * @module
 */
import * as v from 'valibot'
import { actorOf } from '../auth.ts'
import {
  createContainer,
  deleteContainer,
  getContainer,
  listContainers,
  moveContainer,
  updateContainer,
  type ContainerKind,
} from '../catalog/containers.ts'
import {
  addMarketplacePlugin,
  addPluginObject,
  listMarketplacePlugins,
  listPluginObjects,
  removeMarketplacePlugin,
  removePluginObject,
  resolveMarketplace,
  resolvePlugin,
} from '../catalog/memberships.ts'
import { pageQuery } from '../pagination.ts'
import { rules, type Permission } from '../policy.ts'
import {
  AddMarketplacePluginBody,
  AddPluginObjectBody,
  ContainerListQuery,
  CreateContainerBody,
  MarketplaceEntryItem,
  MarketplaceEntryPage,
  MarketplaceItem,
  MarketplacePage,
  PluginItem,
  PluginMemberItem,
  PluginMemberPage,
  PluginPage,
  ResolvedMarketplacePage,
  ResolvedPluginPage,
  UpdateContainerBody,
} from '../wire/catalog.ts'
import { idParams } from '../wire/common.ts'
import { accessRoutes } from './access-routes.ts'
import { route, type RouteContext } from './route.ts'

interface Kind {
  kind: ContainerKind
  noun: 'Plugin' | 'Marketplace'
  plural: string
  param: 'pluginId' | 'marketplaceId'
  prefix: string
  tag: string
  read: Permission
  create: Permission
  write: Permission
  page: typeof PluginPage
  item: typeof PluginItem
}

function containerRoutes(ctx: RouteContext, k: Kind) {
  const base = `/v1/${k.plural}`
  const Params = idParams([k.param, k.prefix])
  const id = (params: Record<string, string>) => params[k.param]!
  const move = (action: 'archive' | 'restore') =>
    route({
      method: 'POST',
      path: `${base}/:${k.param}/${action}`,
      operationId: `${action}${k.noun}`,
      tags: [k.tag],
      summary: `${action === 'archive' ? 'Archive' : 'Restore'} a ${k.kind} (manager)`,
      description:
        'archive: active → archived; restore: archived → active; otherwise 409 `invalid_lifecycle_transition`.',
      auth: rules.org(k.write),
      params: Params,
      responses: { 200: k.item },
      errors: [409],
      handler: async ({ principal, params }) => ({
        item: await moveContainer(ctx.deps, actorOf(principal), k.kind, id(params), action),
      }),
    })
  return [
    route({
      method: 'GET',
      path: base,
      operationId: `list${k.noun}s`,
      tags: [k.tag],
      summary: `${k.noun}s the caller can see`,
      auth: rules.org(k.read),
      query: ContainerListQuery,
      responses: { 200: k.page },
      errors: [400],
      handler: ({ principal, query }) => listContainers(ctx.deps, actorOf(principal), k.kind, query),
    }),
    route({
      method: 'POST',
      path: base,
      operationId: `create${k.noun}`,
      tags: [k.tag],
      summary: `Create a ${k.kind}; the creator gets a manager grant`,
      auth: rules.org(k.create),
      body: CreateContainerBody,
      responses: { 201: k.item },
      handler: async ({ principal, body }) => ({
        item: await createContainer(ctx.deps, actorOf(principal), k.kind, body),
      }),
    }),
    route({
      method: 'GET',
      path: `${base}/:${k.param}`,
      operationId: `get${k.noun}`,
      tags: [k.tag],
      summary: `One ${k.kind}`,
      auth: rules.org(k.read),
      params: Params,
      responses: { 200: k.item },
      handler: async ({ principal, params }) => ({
        item: await getContainer(ctx.deps, actorOf(principal), k.kind, id(params)),
      }),
    }),
    route({
      method: 'PATCH',
      path: `${base}/:${k.param}`,
      operationId: `update${k.noun}`,
      tags: [k.tag],
      summary: `Rename or re-describe a ${k.kind} (editor)`,
      auth: rules.org(k.write),
      params: Params,
      body: UpdateContainerBody,
      responses: { 200: k.item },
      handler: async ({ principal, params, body }) => ({
        item: await updateContainer(ctx.deps, actorOf(principal), k.kind, id(params), body),
      }),
    }),
    route({
      method: 'DELETE',
      path: `${base}/:${k.param}`,
      operationId: `delete${k.noun}`,
      tags: [k.tag],
      summary: `Delete a ${k.kind} with its memberships and grants (manager); what it contained stays`,
      auth: rules.org(k.write),
      params: Params,
      responses: { 204: { description: 'Deleted' } },
      handler: ({ principal, params }) => deleteContainer(ctx.deps, actorOf(principal), k.kind, id(params)),
    }),
    move('archive'),
    move('restore'),
    ...accessRoutes(ctx, {
      type: k.kind,
      base: `${base}/:${k.param}`,
      param: k.param,
      prefix: k.prefix,
      noun: k.noun,
      tag: k.tag,
      read: k.read,
      write: k.write,
    }),
  ]
}

const PluginParams = idParams(['pluginId', 'plg'])
const PluginObjectParams = idParams(['pluginId', 'plg'], ['configObjectId', 'cob'])
const MarketplaceParams = idParams(['marketplaceId', 'mkt'])
const MarketplacePluginParams = idParams(['marketplaceId', 'mkt'], ['pluginId', 'plg'])
const Page = v.object(pageQuery())

/** Plugin and marketplace routes. */
export function pluginRoutes(ctx: RouteContext) {
  return [
    ...containerRoutes(ctx, {
      kind: 'plugin',
      noun: 'Plugin',
      plural: 'plugins',
      param: 'pluginId',
      prefix: 'plg',
      tag: 'plugins',
      read: 'plugins.read',
      create: 'plugins.write',
      write: 'plugins.write',
      page: PluginPage,
      item: PluginItem,
    }),
    route({
      method: 'GET',
      path: '/v1/plugins/:pluginId/config-objects',
      operationId: 'listPluginConfigObjects',
      tags: ['plugins'],
      summary: "The plugin's config objects",
      auth: rules.org('plugins.read'),
      params: PluginParams,
      query: Page,
      responses: { 200: PluginMemberPage },
      errors: [400],
      handler: ({ principal, params, query }) =>
        listPluginObjects(ctx.deps, actorOf(principal), params.pluginId, query),
    }),
    route({
      method: 'POST',
      path: '/v1/plugins/:pluginId/config-objects',
      operationId: 'addPluginConfigObject',
      tags: ['plugins'],
      summary: 'Add a config object to a plugin (editor on the plugin)',
      description: '409 `already_in_plugin`.',
      auth: rules.org('plugins.write'),
      params: PluginParams,
      body: AddPluginObjectBody,
      responses: { 201: PluginMemberItem },
      errors: [409],
      handler: async ({ principal, params, body }) => ({
        item: await addPluginObject(ctx.deps, actorOf(principal), params.pluginId, body.configObjectId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/plugins/:pluginId/config-objects/:configObjectId',
      operationId: 'removePluginConfigObject',
      tags: ['plugins'],
      summary: 'Remove a config object from a plugin (editor)',
      auth: rules.org('plugins.write'),
      params: PluginObjectParams,
      responses: { 204: { description: 'Removed' } },
      handler: ({ principal, params }) =>
        removePluginObject(ctx.deps, actorOf(principal), params.pluginId, params.configObjectId),
    }),
    route({
      method: 'GET',
      path: '/v1/plugins/:pluginId/resolved',
      operationId: 'getResolvedPlugin',
      tags: ['plugins'],
      summary: "The resolved form of each of the plugin's active config objects",
      auth: rules.org('plugins.read'),
      params: PluginParams,
      query: Page,
      responses: { 200: ResolvedPluginPage },
      errors: [400],
      handler: ({ principal, params, query }) => resolvePlugin(ctx.deps, actorOf(principal), params.pluginId, query),
    }),
    ...containerRoutes(ctx, {
      kind: 'marketplace',
      noun: 'Marketplace',
      plural: 'marketplaces',
      param: 'marketplaceId',
      prefix: 'mkt',
      tag: 'marketplaces',
      read: 'marketplaces.read',
      create: 'marketplaces.create',
      write: 'marketplaces.write',
      page: MarketplacePage,
      item: MarketplaceItem,
    }),
    route({
      method: 'GET',
      path: '/v1/marketplaces/:marketplaceId/plugins',
      operationId: 'listMarketplacePlugins',
      tags: ['marketplaces'],
      summary: "The marketplace's plugins (visible as viewer to whoever sees the marketplace)",
      auth: rules.org('marketplaces.read'),
      params: MarketplaceParams,
      query: Page,
      responses: { 200: MarketplaceEntryPage },
      errors: [400],
      handler: ({ principal, params, query }) =>
        listMarketplacePlugins(ctx.deps, actorOf(principal), params.marketplaceId, query),
    }),
    route({
      method: 'POST',
      path: '/v1/marketplaces/:marketplaceId/plugins',
      operationId: 'addMarketplacePlugin',
      tags: ['marketplaces'],
      summary: 'List a plugin in a marketplace (editor on the marketplace)',
      description: '409 `already_in_marketplace`.',
      auth: rules.org('marketplaces.write'),
      params: MarketplaceParams,
      body: AddMarketplacePluginBody,
      responses: { 201: MarketplaceEntryItem },
      errors: [409],
      handler: async ({ principal, params, body }) => ({
        item: await addMarketplacePlugin(ctx.deps, actorOf(principal), params.marketplaceId, body.pluginId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/marketplaces/:marketplaceId/plugins/:pluginId',
      operationId: 'removeMarketplacePlugin',
      tags: ['marketplaces'],
      summary: 'Remove a plugin from a marketplace (editor)',
      auth: rules.org('marketplaces.write'),
      params: MarketplacePluginParams,
      responses: { 204: { description: 'Removed' } },
      handler: ({ principal, params }) =>
        removeMarketplacePlugin(ctx.deps, actorOf(principal), params.marketplaceId, params.pluginId),
    }),
    route({
      method: 'GET',
      path: '/v1/marketplaces/:marketplaceId/resolved',
      operationId: 'getResolvedMarketplace',
      tags: ['marketplaces'],
      summary: "The marketplace's plugins with their active component counts per type",
      auth: rules.org('marketplaces.read'),
      params: MarketplaceParams,
      query: Page,
      responses: { 200: ResolvedMarketplacePage },
      errors: [400],
      handler: ({ principal, params, query }) =>
        resolveMarketplace(ctx.deps, actorOf(principal), params.marketplaceId, query),
    }),
  ]
}
