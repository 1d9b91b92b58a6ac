/**
 * Connector routes: accounts, instances (with access grants), targets and mappings.
 * Discovery and sync routes are in connector-sync-routes.ts.
 * @module
 */
import * as v from 'valibot'
import { actorOf } from '../auth.ts'
import { OBJECT_TYPES } from '../catalog/config-source.ts'
import { CONNECTOR_TYPES, createAccount, createInstance, deleteAccount, deleteInstance, getAccount, instanceFor, instanceView, INSTANCE_STATES, listAccounts, listInstances, updateAccount, updateInstance } from '../connectors/connector-accounts.ts'
import { createMapping, createTarget, deleteMapping, deleteTarget, getMapping, listMappings, listTargets, targetFor, targetView, TARGET_KINDS, updateMapping, updateTarget } from '../connectors/connector-targets.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import { idParams } from '../wire/common.ts'
import {
  ConnectorAccountItem, ConnectorAccountPage, ConnectorInstanceItem, ConnectorInstancePage, ConnectorMappingItem, ConnectorMappingPage, ConnectorTargetItem, ConnectorTargetPage,
  CreateAccountBody, CreateInstanceBody, CreateMappingBody, CreateTargetBody, UpdateAccountBody, UpdateInstanceBody, UpdateMappingBody, UpdateTargetBody,
} from '../wire/connectors.ts'
import { accessRoutes } from './access-routes.ts'
import { route, type RouteContext } from './route.ts'

const AccountParams = idParams(['connectorAccountId', 'cac'])
const InstanceParams = idParams(['connectorInstanceId', 'cin'])
const TargetParams = idParams(['connectorTargetId', 'ctg'])
const MappingParams = idParams(['connectorMappingId', 'cmp'])
const tags = ['connectors']
const GRANTS = 'Needs viewer on the instance to read and editor to change (owners and admins act as manager); an instance the caller cannot see is 404.'

/** Account, instance, target and mapping routes. */
export function connectorRoutes(ctx: AsyncContext, routeContext: RouteContext) {
  return [
    route({
      method: 'GET', path: '/v1/connector-accounts', operationId: 'listConnectorAccounts', tags, summary: 'Connector accounts of the organization',
      auth: rules.org('connectors.read'), query: v.object({ ...pageQuery(), connectorType: v.optional(v.picklist(CONNECTOR_TYPES)) }), responses: { 200: ConnectorAccountPage }, errors: [400],
      handler: ({ principal, query }) => listAccounts(ctx, principal.org!.id, query),
    }),
    route({
      method: 'POST', path: '/v1/connector-accounts', operationId: 'createConnectorAccount', tags, summary: 'Create a connector account; credentials are stored encrypted and never returned',
      description: '409 `connector_account_exists` for the same type and remote id.',
      auth: rules.org('connectors.create'), body: CreateAccountBody, responses: { 201: ConnectorAccountItem }, errors: [409],
      handler: async ({ principal, body }) => ({ item: await createAccount(ctx, actorOf(principal), body) }),
    }),
    route({
      method: 'GET', path: '/v1/connector-accounts/:connectorAccountId', operationId: 'getConnectorAccount', tags, summary: 'One connector account',
      auth: rules.org('connectors.read'), params: AccountParams, responses: { 200: ConnectorAccountItem },
      handler: async ({ principal, params }) => ({ item: await getAccount(ctx, principal.org!.id, params.connectorAccountId) }),
    }),
    route({
      method: 'PATCH', path: '/v1/connector-accounts/:connectorAccountId', operationId: 'updateConnectorAccount', tags, summary: 'Rename an account, change its metadata, or replace or remove its credentials',
      auth: rules.org('connectors.create'), params: AccountParams, body: UpdateAccountBody, responses: { 200: ConnectorAccountItem },
      handler: async ({ principal, params, body }) => ({ item: await updateAccount(ctx, actorOf(principal), params.connectorAccountId, body) }),
    }),
    route({
      method: 'DELETE', path: '/v1/connector-accounts/:connectorAccountId', operationId: 'deleteConnectorAccount', tags, summary: 'Delete an account with its instances, targets, mappings and sync history (synced config objects stay)',
      auth: rules.org('connectors.create'), params: AccountParams, responses: { 204: { description: 'Deleted' } },
      handler: ({ principal, params }) => deleteAccount(ctx, actorOf(principal), params.connectorAccountId),
    }),
    route({
      method: 'GET', path: '/v1/connector-instances', operationId: 'listConnectorInstances', tags, summary: 'Connector instances the caller can see',
      auth: rules.org('connectors.read'),
      query: v.object({ ...pageQuery(), connectorAccountId: v.optional(v.pipe(v.string(), v.maxLength(40))), connectorType: v.optional(v.picklist(CONNECTOR_TYPES)), status: v.optional(v.picklist(INSTANCE_STATES)) }),
      responses: { 200: ConnectorInstancePage }, errors: [400],
      handler: ({ principal, query }) => listInstances(ctx, actorOf(principal), query),
    }),
    route({
      method: 'POST', path: '/v1/connector-instances', operationId: 'createConnectorInstance', tags, summary: 'Create an instance of an account; the creator becomes its manager',
      description: '404 `connector_account_not_found`; 409 `connector_instance_exists` for a name in use; 422 when `connectorType` is not the account\'s.',
      auth: rules.org('connectors.create'), body: CreateInstanceBody, responses: { 201: ConnectorInstanceItem }, errors: [404, 409],
      handler: async ({ principal, body }) => ({ item: await createInstance(ctx, actorOf(principal), body) }),
    }),
    route({
      method: 'GET', path: '/v1/connector-instances/:connectorInstanceId', operationId: 'getConnectorInstance', tags, summary: 'One connector instance', description: GRANTS,
      auth: rules.org('connectors.read'), params: InstanceParams, responses: { 200: ConnectorInstanceItem },
      handler: async ({ principal, params }) => ({ item: instanceView(await instanceFor(ctx, actorOf(principal), params.connectorInstanceId, 'viewer')) }),
    }),
    route({
      method: 'PATCH', path: '/v1/connector-instances/:connectorInstanceId', operationId: 'updateConnectorInstance', tags, summary: 'Rename, reconfigure, disable or enable an instance', description: GRANTS,
      auth: rules.org('connectors.write'), params: InstanceParams, body: UpdateInstanceBody, responses: { 200: ConnectorInstanceItem }, errors: [409],
      handler: async ({ principal, params, body }) => ({ item: await updateInstance(ctx, actorOf(principal), params.connectorInstanceId, body) }),
    }),
    route({
      method: 'DELETE', path: '/v1/connector-instances/:connectorInstanceId', operationId: 'deleteConnectorInstance', tags, summary: 'Delete an instance (manager) with its targets, mappings and sync history; synced config objects stay',
      auth: rules.org('connectors.write'), params: InstanceParams, responses: { 204: { description: 'Deleted' } },
      handler: ({ principal, params }) => deleteInstance(ctx, actorOf(principal), params.connectorInstanceId),
    }),
    ...accessRoutes(routeContext, { type: 'connector_instance', base: '/v1/connector-instances/:connectorInstanceId', param: 'connectorInstanceId', prefix: 'cin', noun: 'ConnectorInstance', tag: 'connectors', read: 'connectors.read', write: 'connectors.write' }),
    route({
      method: 'GET', path: '/v1/connector-instances/:connectorInstanceId/targets', operationId: 'listConnectorTargets', tags, summary: "An instance's targets", description: GRANTS,
      auth: rules.org('connectors.read'), params: InstanceParams, query: v.object({ ...pageQuery(), targetKind: v.optional(v.picklist(TARGET_KINDS)) }), responses: { 200: ConnectorTargetPage }, errors: [400],
      handler: ({ principal, params, query }) => listTargets(ctx, actorOf(principal), params.connectorInstanceId, query),
    }),
    route({
      method: 'POST', path: '/v1/connector-instances/:connectorInstanceId/targets', operationId: 'createConnectorTarget', tags, summary: 'Add a target (a repository branch) to an instance',
      description: `${GRANTS} git: \`remoteId\` is a clone URL (file:// only when the server allows it); when the account has credentials it must be an https:// URL on the account's remote host and under its path, since the account's token is sent there (422 otherwise, also on PATCH). github: \`owner/repo\`. 409 \`connector_target_exists\`.`,
      auth: rules.org('connectors.write'), params: InstanceParams, body: CreateTargetBody, responses: { 201: ConnectorTargetItem }, errors: [409],
      handler: async ({ principal, params, body }) => ({ item: await createTarget(ctx, actorOf(principal), params.connectorInstanceId, body) }),
    }),
    route({
      method: 'GET', path: '/v1/connector-targets/:connectorTargetId', operationId: 'getConnectorTarget', tags, summary: 'One target', description: GRANTS,
      auth: rules.org('connectors.read'), params: TargetParams, responses: { 200: ConnectorTargetItem },
      handler: async ({ principal, params }) => ({ item: targetView(await targetFor(ctx, actorOf(principal), params.connectorTargetId, 'viewer')) }),
    }),
    route({
      method: 'PATCH', path: '/v1/connector-targets/:connectorTargetId', operationId: 'updateConnectorTarget', tags, summary: "Change a target's remote id or branch", description: GRANTS,
      auth: rules.org('connectors.write'), params: TargetParams, body: UpdateTargetBody, responses: { 200: ConnectorTargetItem }, errors: [409],
      handler: async ({ principal, params, body }) => ({ item: await updateTarget(ctx, actorOf(principal), params.connectorTargetId, body) }),
    }),
    route({
      method: 'DELETE', path: '/v1/connector-targets/:connectorTargetId', operationId: 'deleteConnectorTarget', tags, summary: 'Delete a target with its mappings and sync history; synced config objects stay', description: GRANTS,
      auth: rules.org('connectors.write'), params: TargetParams, responses: { 204: { description: 'Deleted' } },
      handler: ({ principal, params }) => deleteTarget(ctx, actorOf(principal), params.connectorTargetId),
    }),
    route({
      method: 'GET', path: '/v1/connector-targets/:connectorTargetId/mappings', operationId: 'listConnectorMappings', tags, summary: "A target's mappings", description: GRANTS,
      auth: rules.org('connectors.read'), params: TargetParams, query: v.object({ ...pageQuery(), objectType: v.optional(v.picklist(OBJECT_TYPES)) }), responses: { 200: ConnectorMappingPage }, errors: [400],
      handler: ({ principal, params, query }) => listMappings(ctx, actorOf(principal), params.connectorTargetId, query),
    }),
    route({
      method: 'POST', path: '/v1/connector-targets/:connectorTargetId/mappings', operationId: 'createConnectorMapping', tags, summary: 'Map the files a selector picks to config objects of one type',
      description: `${GRANTS} A pluginId needs editor on that plugin too: 404 \`plugin_not_found\` when the caller cannot see it, 403 when they only view it; 409 \`connector_mapping_exists\`.`,
      auth: rules.org('connectors.write'), params: TargetParams, body: CreateMappingBody, responses: { 201: ConnectorMappingItem }, errors: [409],
      handler: async ({ principal, params, body }) => ({ item: await createMapping(ctx, actorOf(principal), params.connectorTargetId, body) }),
    }),
    route({
      method: 'GET', path: '/v1/connector-mappings/:connectorMappingId', operationId: 'getConnectorMapping', tags, summary: 'One mapping', description: GRANTS,
      auth: rules.org('connectors.read'), params: MappingParams, responses: { 200: ConnectorMappingItem },
      handler: async ({ principal, params }) => ({ item: await getMapping(ctx, actorOf(principal), params.connectorMappingId) }),
    }),
    route({
      method: 'PATCH', path: '/v1/connector-mappings/:connectorMappingId', operationId: 'updateConnectorMapping', tags, summary: "Change a mapping's selector, plugin or configuration", description: GRANTS,
      auth: rules.org('connectors.write'), params: MappingParams, body: UpdateMappingBody, responses: { 200: ConnectorMappingItem }, errors: [409],
      handler: async ({ principal, params, body }) => ({ item: await updateMapping(ctx, actorOf(principal), params.connectorMappingId, body) }),
    }),
    route({
      method: 'DELETE', path: '/v1/connector-mappings/:connectorMappingId', operationId: 'deleteConnectorMapping', tags, summary: 'Delete a mapping; config objects it created stay with their history', description: GRANTS,
      auth: rules.org('connectors.write'), params: MappingParams, responses: { 204: { description: 'Deleted' } },
      handler: ({ principal, params }) => deleteMapping(ctx, actorOf(principal), params.connectorMappingId),
    }),
  ]
}
