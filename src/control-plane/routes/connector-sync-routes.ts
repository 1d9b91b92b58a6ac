/**
 * Connector discovery and sync routes: asynchronous (202 with the object to re-read by id).
 * @module
 */
import * as v from 'valibot'
import { actorOf } from '../auth.ts'
import { getDiscovery, requestDiscovery } from '../connectors/connector-discovery.ts'
import { getSyncEvent, listSyncEvents, requestSync, retrySync, SYNC_STATES } from '../connectors/connector-sync.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import { idOf, idParams } from '../wire/common.ts'
import { ConnectorDiscoveryItem, ConnectorSyncEventItem, ConnectorSyncEventPage } from '../wire/connectors.ts'
import { route } from './route.ts'

const TargetParams = idParams(['connectorTargetId', 'ctg'])
const tags = ['connectors']

/** Discovery and sync routes. */
export function connectorSyncRoutes(ctx: AsyncContext) {
  return [
    route({
      method: 'POST',
      path: '/v1/connector-targets/:connectorTargetId/discovery',
      operationId: 'discoverConnectorTarget',
      tags,
      summary: 'Walk a target for importable items (skills, commands, agents, tools, plugin manifests)',
      description:
        '202: re-read `GET /v1/connector-discoveries/:id` until `completed` (items) or `failed` (reason). Needs editor on the instance.',
      auth: rules.org('connectors.write'),
      params: TargetParams,
      responses: { 202: ConnectorDiscoveryItem },
      handler: async ({ principal, params }) => ({
        item: await requestDiscovery(ctx, actorOf(principal), params.connectorTargetId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/connector-discoveries/:connectorDiscoveryId',
      operationId: 'getConnectorDiscovery',
      tags,
      summary: 'A discovery: its state and, when completed, the items found with suggested selectors',
      auth: rules.org('connectors.read'),
      params: idParams(['connectorDiscoveryId', 'cdi']),
      responses: { 200: ConnectorDiscoveryItem },
      handler: async ({ principal, params }) => ({
        item: await getDiscovery(ctx, actorOf(principal), params.connectorDiscoveryId),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/connector-targets/:connectorTargetId/sync',
      operationId: 'syncConnectorTarget',
      tags,
      summary: 'Sync a target: its mappings create and version config objects (sourceMode connector)',
      description:
        '202 with the sync event (`queued`); re-read it until `completed`, `partial` (see `failures`) or `failed` (see `error`). 409 `sync_in_progress` while one is queued or running (details name it); 409 `connector_instance_disabled`. Needs editor on the instance.',
      auth: rules.org('connectors.write'),
      params: TargetParams,
      responses: { 202: ConnectorSyncEventItem },
      errors: [409],
      handler: async ({ principal, params }) => ({
        item: await requestSync(ctx, actorOf(principal), params.connectorTargetId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/connector-sync-events',
      operationId: 'listConnectorSyncEvents',
      tags,
      summary: 'Sync events of the instances the caller can see, newest first',
      auth: rules.org('connectors.read'),
      query: v.object({
        ...pageQuery(),
        connectorInstanceId: v.optional(idOf('cin')),
        connectorTargetId: v.optional(idOf('ctg')),
        status: v.optional(v.picklist(SYNC_STATES)),
      }),
      responses: { 200: ConnectorSyncEventPage },
      errors: [400],
      handler: ({ principal, query }) => listSyncEvents(ctx, actorOf(principal), query),
    }),
    route({
      method: 'GET',
      path: '/v1/connector-sync-events/:connectorSyncEventId',
      operationId: 'getConnectorSyncEvent',
      tags,
      summary: 'One sync event: state, counts, per-item failures and the reason of a failure',
      auth: rules.org('connectors.read'),
      params: idParams(['connectorSyncEventId', 'cse']),
      responses: { 200: ConnectorSyncEventItem },
      handler: async ({ principal, params }) => ({
        item: await getSyncEvent(ctx, actorOf(principal), params.connectorSyncEventId),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/connector-sync-events/:connectorSyncEventId/retry',
      operationId: 'retryConnectorSyncEvent',
      tags,
      summary: 'Run a failed or partial sync again; items already imported by it are skipped',
      description:
        '202 with the event back in `queued`. 409 `sync_not_retriable` for other states; 409 `sync_in_progress` when another sync of the target is queued or running.',
      auth: rules.org('connectors.write'),
      params: idParams(['connectorSyncEventId', 'cse']),
      responses: { 202: ConnectorSyncEventItem },
      errors: [409],
      handler: async ({ principal, params }) => ({
        item: await retrySync(ctx, actorOf(principal), params.connectorSyncEventId),
      }),
    }),
  ]
}
