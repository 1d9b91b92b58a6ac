/**
 * Wire schemas of connectors: accounts, instances, targets, mappings, discoveries and sync
 * events. Request bodies follow the reference shapes (§2.7); credentials are write-only.
 * @module
 */
import * as v from 'valibot'
import { OBJECT_TYPES } from '../catalog/config-source.ts'
import { CONNECTOR_TYPES, INSTANCE_STATES } from '../connectors/connector-accounts.ts'
import { DISCOVERY_STATES } from '../connectors/connector-discovery.ts'
import { SYNC_STATES } from '../connectors/connector-sync.ts'
import { MAPPING_KINDS, TARGET_KINDS } from '../connectors/connector-targets.ts'
import { ITEM_KINDS } from '../connectors/source-items.ts'
import { idOf, itemOf, nameField, pageOf, Timestamp } from './common.ts'
import { FailureReason } from './jobs.ts'

const JsonObject = v.pipe(
  v.record(v.string(), v.unknown()),
  v.check((value) => JSON.stringify(value).length <= 16_384, 'must be at most 16 KiB as JSON'),
)
const Credentials = v.pipe(
  v.strictObject({
    token: v.pipe(
      v.string(),
      v.minLength(1),
      v.maxLength(4096),
      v.description('Access token (GitHub token, or an HTTPS token for git); stored encrypted, never returned'),
    ),
  }),
  v.description('Write-only; responses say `hasCredentials`'),
)
const RemoteId = v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(1024))
const ConnectorType = v.picklist(CONNECTOR_TYPES, 'must be git or github')
const TargetConfig = v.strictObject({
  branch: v.optional(v.pipe(v.string(), v.regex(/^(?!-)[\w./-]{1,200}$/, 'must be a branch name'))),
})

/** A connector account. */
export const ConnectorAccount = v.pipe(
  v.strictObject({
    id: idOf('cac'),
    connectorType: ConnectorType,
    remoteId: v.string(),
    displayName: v.string(),
    metadata: v.nullable(v.record(v.string(), v.unknown())),
    hasCredentials: v.boolean(),
    status: v.string(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  v.title('ConnectorAccount'),
)
/** Pages and items of accounts. */
export const ConnectorAccountPage = pageOf(ConnectorAccount, 'ConnectorAccountPage')
export const ConnectorAccountItem = itemOf(ConnectorAccount, 'ConnectorAccountItem')
/** `POST /v1/connector-accounts`. */
export const CreateAccountBody = v.strictObject({
  connectorType: ConnectorType,
  remoteId: RemoteId,
  displayName: nameField(255),
  metadata: v.optional(JsonObject),
  credentials: v.optional(Credentials),
})
/** `PATCH /v1/connector-accounts/:id`. */
export const UpdateAccountBody = v.pipe(
  v.strictObject({
    displayName: v.optional(nameField(255)),
    metadata: v.optional(v.nullable(JsonObject)),
    credentials: v.optional(v.nullable(Credentials)),
  }),
  v.check((b) => Object.keys(b).length > 0, 'give at least one field to change'),
)

/** A connector instance. */
export const ConnectorInstance = v.pipe(
  v.strictObject({
    id: idOf('cin'),
    connectorAccountId: idOf('cac'),
    connectorType: ConnectorType,
    name: v.string(),
    config: v.nullable(v.record(v.string(), v.unknown())),
    status: v.picklist(INSTANCE_STATES),
    lastSyncedAt: v.nullable(Timestamp),
    lastSyncStatus: v.nullable(v.string()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  v.title('ConnectorInstance'),
)
export const ConnectorInstancePage = pageOf(ConnectorInstance, 'ConnectorInstancePage')
export const ConnectorInstanceItem = itemOf(ConnectorInstance, 'ConnectorInstanceItem')
/** `POST /v1/connector-instances`. */
export const CreateInstanceBody = v.strictObject({
  connectorAccountId: idOf('cac'),
  connectorType: ConnectorType,
  name: nameField(255),
  config: v.optional(JsonObject),
})
/** `PATCH /v1/connector-instances/:id`. */
export const UpdateInstanceBody = v.pipe(
  v.strictObject({
    name: v.optional(nameField(255)),
    config: v.optional(v.nullable(JsonObject)),
    status: v.optional(v.picklist(INSTANCE_STATES)),
  }),
  v.check((b) => Object.keys(b).length > 0, 'give at least one field to change'),
)

/** A connector target. */
export const ConnectorTarget = v.pipe(
  v.strictObject({
    id: idOf('ctg'),
    connectorInstanceId: idOf('cin'),
    connectorType: ConnectorType,
    remoteId: v.pipe(v.string(), v.description('git: clone URL; github: owner/repo')),
    targetKind: v.picklist(TARGET_KINDS),
    config: TargetConfig,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  v.title('ConnectorTarget'),
)
export const ConnectorTargetPage = pageOf(ConnectorTarget, 'ConnectorTargetPage')
export const ConnectorTargetItem = itemOf(ConnectorTarget, 'ConnectorTargetItem')
/** `POST /v1/connector-instances/:id/targets`. */
export const CreateTargetBody = v.strictObject({
  connectorType: ConnectorType,
  remoteId: RemoteId,
  targetKind: v.picklist(TARGET_KINDS, 'must be repository_branch'),
  config: TargetConfig,
})
/** `PATCH /v1/connector-targets/:id`. */
export const UpdateTargetBody = v.pipe(
  v.strictObject({ remoteId: v.optional(RemoteId), config: v.optional(TargetConfig) }),
  v.check((b) => Object.keys(b).length > 0, 'give at least one field to change'),
)

const Selector = v.pipe(
  v.string(),
  v.minLength(1),
  v.maxLength(512),
  v.description('Path pattern over the repository: * within a segment, ** across segments (e.g. skills/*/SKILL.md)'),
)
/** A connector mapping. */
export const ConnectorMapping = v.pipe(
  v.strictObject({
    id: idOf('cmp'),
    connectorTargetId: idOf('ctg'),
    mappingKind: v.picklist(MAPPING_KINDS),
    selector: v.string(),
    objectType: v.picklist(OBJECT_TYPES),
    pluginId: v.nullable(idOf('plg')),
    config: v.nullable(v.record(v.string(), v.unknown())),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  v.title('ConnectorMapping'),
)
export const ConnectorMappingPage = pageOf(ConnectorMapping, 'ConnectorMappingPage')
export const ConnectorMappingItem = itemOf(ConnectorMapping, 'ConnectorMappingItem')
/** `POST /v1/connector-targets/:id/mappings`. */
export const CreateMappingBody = v.strictObject({
  mappingKind: v.picklist(MAPPING_KINDS, 'must be path'),
  selector: Selector,
  objectType: v.picklist(OBJECT_TYPES),
  pluginId: v.optional(idOf('plg')),
  config: v.optional(JsonObject),
})
/** `PATCH /v1/connector-mappings/:id`. */
export const UpdateMappingBody = v.pipe(
  v.strictObject({
    selector: v.optional(Selector),
    pluginId: v.optional(v.nullable(idOf('plg'))),
    config: v.optional(v.nullable(JsonObject)),
  }),
  v.check((b) => Object.keys(b).length > 0, 'give at least one field to change'),
)

/** A discovery. */
export const ConnectorDiscovery = v.pipe(
  v.strictObject({
    id: idOf('cdi'),
    connectorTargetId: idOf('ctg'),
    status: v.picklist(DISCOVERY_STATES),
    sourceRevision: v.nullable(v.string()),
    summary: v.record(v.string(), v.number()),
    items: v.array(
      v.strictObject({
        path: v.string(),
        kind: v.picklist(ITEM_KINDS),
        objectType: v.nullable(v.picklist(['skill', 'command', 'agent', 'tool'])),
        name: v.string(),
        size: v.number(),
        suggestedSelector: v.string(),
        fileCount: v.optional(
          v.pipe(v.number(), v.description('Skills: files of the folder a sync brings, SKILL.md included')),
        ),
      }),
    ),
    warnings: v.array(v.string()),
    error: v.nullable(FailureReason),
    jobId: v.nullable(idOf('job')),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    completedAt: v.nullable(Timestamp),
  }),
  v.title('ConnectorDiscovery'),
)
export const ConnectorDiscoveryItem = itemOf(ConnectorDiscovery, 'ConnectorDiscoveryItem')

/** A sync event. */
export const ConnectorSyncEvent = v.pipe(
  v.strictObject({
    id: idOf('cse'),
    connectorInstanceId: idOf('cin'),
    connectorTargetId: idOf('ctg'),
    eventType: v.picklist(['manual', 'retry']),
    status: v.picklist(SYNC_STATES),
    sourceRevision: v.nullable(v.string()),
    counts: v.strictObject({
      total: v.number(),
      processed: v.number(),
      created: v.number(),
      updated: v.number(),
      unchanged: v.number(),
      deleted: v.pipe(
        v.number(),
        v.description('Objects soft-deleted because their file is gone from the source (history kept)'),
      ),
      failed: v.number(),
    }),
    failures: v.array(v.strictObject({ path: v.string(), reason: v.string(), message: v.string() })),
    error: v.nullable(FailureReason),
    attemptCount: v.number(),
    nextAttemptAt: v.nullable(Timestamp),
    jobId: v.nullable(idOf('job')),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    startedAt: v.nullable(Timestamp),
    completedAt: v.nullable(Timestamp),
  }),
  v.title('ConnectorSyncEvent'),
)
export const ConnectorSyncEventPage = pageOf(ConnectorSyncEvent, 'ConnectorSyncEventPage')
export const ConnectorSyncEventItem = itemOf(ConnectorSyncEvent, 'ConnectorSyncEventItem')
