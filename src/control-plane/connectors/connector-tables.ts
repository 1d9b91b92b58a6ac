/**
 * Table types of connectors (migration 0022): account → instance → target → mapping, with
 * discovery results, sync events and the bindings from source items to config objects.
 * @module
 */

/** `connector_account`: who the organization connects as (credentials sealed). */
export interface ConnectorAccountTable {
  id: string
  org_id: string
  connector_type: string
  remote_id: string
  display_name: string
  metadata: string | null
  credentials_sealed: string | null
  status: string
  created_by_member_id: string | null
  created_at: string
  updated_at: string
}

/** `connector_instance`: one configured use of an account. */
export interface ConnectorInstanceTable {
  id: string
  org_id: string
  connector_account_id: string
  connector_type: string
  name: string
  config: string | null
  status: string
  last_synced_at: string | null
  last_sync_status: string | null
  created_by_member_id: string | null
  created_at: string
  updated_at: string
}

/** `connector_target`: one source inside an instance (a repository branch). */
export interface ConnectorTargetTable {
  id: string
  org_id: string
  instance_id: string
  connector_type: string
  remote_id: string
  target_kind: string
  config: string
  created_at: string
  updated_at: string
}

/** `connector_mapping`: which items of a target become which config objects. */
export interface ConnectorMappingTable {
  id: string
  org_id: string
  target_id: string
  mapping_kind: string
  selector: string
  object_type: string
  plugin_id: string | null
  config: string | null
  created_at: string
  updated_at: string
}

/** `connector_discovery`: one walk of a target for importable items. */
export interface ConnectorDiscoveryTable {
  id: string
  org_id: string
  target_id: string
  status: string
  source_revision: string | null
  items: string | null
  warnings: string | null
  error_reason: string | null
  error_message: string | null
  job_id: string | null
  created_at: string
  updated_at: string
  completed_at: string | null
}

/** `connector_sync_event`: one sync of a target. */
export interface ConnectorSyncEventTable {
  id: string
  org_id: string
  instance_id: string
  target_id: string
  event_type: string
  status: string
  source_revision: string | null
  total_count: number
  processed_count: number
  created_count: number
  updated_count: number
  unchanged_count: number
  failed_count: number
  /** Objects soft-deleted because their source item disappeared (migration 0023). */
  deleted_count: number
  failures: string | null
  error_reason: string | null
  error_message: string | null
  attempt_count: number
  next_attempt_at: string | null
  job_id: string | null
  triggered_by_member_id: string | null
  triggered_by_user_id: string | null
  credential_kind: string
  api_key_id: string | null
  created_at: string
  updated_at: string
  started_at: string | null
  completed_at: string | null
}

/** `connector_source_binding`: a source item (by path) bound to the config object it became. */
export interface ConnectorSourceBindingTable {
  id: string
  org_id: string
  target_id: string
  mapping_id: string
  locator: string
  config_object_id: string
  content_hash: string
  source_revision: string | null
  last_sync_event_id: string | null
  created_at: string
  updated_at: string
}
