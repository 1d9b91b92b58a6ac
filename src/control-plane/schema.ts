/**
 * Table types of the control-plane database (the kysely `DB` type). One interface per table,
 * in the column names the migrations create. Timestamps are ISO-8601 text; booleans 0/1.
 * @module
 */
import type { Kysely, Transaction } from 'kysely'
import type {
  ConnectorAccountTable,
  ConnectorDiscoveryTable,
  ConnectorInstanceTable,
  ConnectorMappingTable,
  ConnectorSourceBindingTable,
  ConnectorSyncEventTable,
  ConnectorTargetTable,
} from './connectors/connector-tables.ts'
import type { DeliveryCapabilityTable, PluginAssignmentTable, WorkerDeliveryTable } from './delivery/delivery-tables.ts'
import type { JobTable } from './jobs/job-tables.ts'
import type {
  OAuthAuthorizationTable,
  OAuthClientTable,
  OAuthDeviceRequestTable,
  OAuthGrantTable,
  OAuthTokenTable,
} from './oauth/oauth-tables.ts'
import type {
  OrgAdmissionPolicyTable,
  SsoConnectionTable,
  SsoDomainTable,
  SsoIdentityTable,
  SsoLoginTable,
} from './sso/sso-tables.ts'
import type { IdempotencyKeyTable } from './idempotency/idempotency-tables.ts'
import type { ScimGroupTable, ScimTokenTable, ScimUserTable } from './scim/scim-tables.ts'
import type { ControlPlaneInstanceTable, WorkerTable, WorkerTokenTable } from './workers/worker-tables.ts'

/** `instance`: one row identifying this database. */
export interface InstanceTable {
  id: string
  created_at: string
  schema_note: string | null
}

/** `app_user`: a person who can sign in. */
export interface UserTable {
  id: string
  email: string
  name: string
  /** `scrypt$N$r$p$salt$hash`; never the password. */
  password_hash: string
  created_at: string
  updated_at: string
}

/** `user_session`: a signed-in session, found by the SHA-256 of its bearer token. */
export interface SessionTable {
  id: string
  user_id: string
  token_hash: string
  active_org_id: string | null
  created_at: string
  refreshed_at: string
  expires_at: string
  /** The organization whose identity provider signed this session in; null: a password session. */
  sso_org_id: string | null
}

/** `organization`. */
export interface OrganizationTable {
  id: string
  name: string
  created_at: string
  updated_at: string
}

/** `member`: a user's membership in one organization, with one role. */
export interface MemberTable {
  id: string
  org_id: string
  user_id: string
  role: string
  created_at: string
  updated_at: string
}

/** `invitation`: a one-time token (stored hashed) letting an email join with a role. */
export interface InvitationTable {
  id: string
  org_id: string
  email: string
  role: string
  token_hash: string
  /** `pending | accepted | canceled`; `expired` is derived from `expires_at` on read. */
  status: string
  invited_by_member_id: string | null
  accepted_by_user_id: string | null
  created_at: string
  expires_at: string
  closed_at: string | null
}

/** `api_key`: an organization key acting as the member who created it, stored hashed. */
export interface ApiKeyTable {
  id: string
  org_id: string
  member_id: string
  user_id: string
  name: string
  /** The first characters of the key, for recognising it in lists. */
  start: string
  key_hash: string
  /** The creating member's role when the key was made; a role change disables the key. */
  role: string
  created_at: string
  expires_at: string | null
  last_used_at: string | null
  disabled_at: string | null
  disabled_reason: string | null
}

/** `team`. */
export interface TeamTable {
  id: string
  org_id: string
  name: string
  description: string | null
  created_at: string
  updated_at: string
}

/** `team_member`: a member in a team. */
export interface TeamMemberTable {
  team_id: string
  member_id: string
  created_at: string
}

/** `audit_event`: one administrative action. */
export interface AuditEventTable {
  id: string
  /** Null for an event outside any organization (a refused sign-in, a sign-up without one). */
  org_id: string | null
  action: string
  actor_user_id: string | null
  actor_member_id: string | null
  credential_kind: string
  api_key_id: string | null
  target_type: string
  target_id: string
  /** JSON of small non-secret facts, or null. */
  data: string | null
  created_at: string
  /** `api`, `console`, `mcp`, `scim` or `sso`; null on rows written before 0085 (the HTTP API). */
  origin: string | null
  /** `success`, `denied` (401/403) or `failed` (any other error). */
  outcome: string
  /** The error's stable `code` when the request did not succeed. */
  error_code: string | null
  /** The request's `X-Request-Id`. */
  request_id: string | null
  /** The declared route, `METHOD /path/:param` (never the query string). */
  route: string | null
}

/** `config_object`: addressable shared configuration; content lives in its versions. */
export interface ConfigObjectTable {
  id: string
  org_id: string
  object_type: string
  source_mode: string
  title: string
  description: string | null
  /** File-safe name derived from the latest version (a skill's frontmatter name, else the title). */
  name: string
  /** `active | archived | deleted`. */
  status: string
  connector_instance_id: string | null
  created_by_member_id: string | null
  latest_version_id: string | null
  version_count: number
  /** Summary of the latest version, kept with it (see migration 0011). */
  latest_created_via: string | null
  latest_created_by_member_id: string | null
  latest_source_revision_ref: string | null
  latest_created_at: string | null
  created_at: string
  updated_at: string
  archived_at: string | null
  deleted_at: string | null
}

/** `config_object_version`: one immutable version, numbered 1.. per object. */
export interface ConfigObjectVersionTable {
  id: string
  org_id: string
  config_object_id: string
  number: number
  raw_source_text: string | null
  /** JSON of the normalized payload. */
  normalized_payload: string
  created_via: string
  created_by_member_id: string | null
  connector_sync_event_id: string | null
  source_revision_ref: string | null
  created_at: string
  /** Skills: JSON of the files beside SKILL.md (`[{path, contentBase64, executable}]`); else null. */
  files?: string | null
  /** Skills: hash of SKILL.md and every file (see `bundleHash`); equal hashes add no version. */
  content_hash?: string | null
}

/** `config_object_term`: one search word of an object's title, description or latest content. */
export interface ConfigObjectTermTable {
  org_id: string
  term: string
  config_object_id: string
}

/** `access_grant`: a role on one catalog resource for a member, a team or the organization. */
export interface AccessGrantTable {
  id: string
  org_id: string
  /** `config_object | plugin | marketplace | skill_hub | llm_provider`. */
  resource_type: string
  resource_id: string
  member_id: string | null
  team_id: string | null
  org_wide: number
  /** `member:<id>`, `team:<id>` or `org`; unique per resource. */
  principal_key: string
  /** `viewer | editor | manager`. */
  role: string
  created_by_member_id: string | null
  created_at: string
  updated_at: string
}

/** `plugin` and `marketplace` share this shape. */
export interface CatalogContainerTable {
  id: string
  org_id: string
  name: string
  description: string | null
  /** `active | archived`. */
  status: string
  created_by_member_id: string | null
  created_at: string
  updated_at: string
  archived_at: string | null
}

/** `plugin_config_object`: a config object in a plugin. */
export interface PluginConfigObjectTable {
  id: string
  org_id: string
  plugin_id: string
  config_object_id: string
  /** `manual | api | connector | system`. */
  membership_source: string
  connector_mapping_id: string | null
  created_by_member_id: string | null
  created_at: string
}

/** `marketplace_plugin`: a plugin listed in a marketplace. */
export interface MarketplacePluginTable {
  id: string
  org_id: string
  marketplace_id: string
  plugin_id: string
  membership_source: string
  created_by_member_id: string | null
  created_at: string
}

/** `skill_hub`: a reusable collection of skills. */
export interface SkillHubTable {
  id: string
  org_id: string
  name: string
  description: string | null
  created_by_member_id: string | null
  created_at: string
  updated_at: string
}

/** `skill_hub_skill`: a skill (config object of type skill) in a hub. */
export interface SkillHubSkillTable {
  id: string
  org_id: string
  hub_id: string
  config_object_id: string
  created_by_member_id: string | null
  created_at: string
}

/** `skill_hub_assignment`: a hub delivered to a member, a team or the organization. */
export interface SkillHubAssignmentTable {
  id: string
  org_id: string
  hub_id: string
  member_id: string | null
  team_id: string | null
  org_wide: number
  principal_key: string
  created_by_member_id: string | null
  created_at: string
}

/** `llm_provider`: a shared model provider; the API key is sealed, never plaintext. */
export interface LlmProviderTable {
  id: string
  org_id: string
  name: string
  /** `catalog | custom`. */
  source: string
  catalog_provider_id: string | null
  base_url: string | null
  api: string
  /** JSON array of `{id, name}`. */
  models: string
  /** Secret-box sealed API key bound to the row id, or null. */
  api_key_sealed: string | null
  created_by_member_id: string | null
  created_at: string
  updated_at: string
}

/** Sign-in/sign-up throttle windows, keyed by a hash of `account:<email>` or `address:<ip>`. */
export interface SignInThrottleTable {
  key: string
  failures: number
  window_started_at: string
}

/** One change in an organization's feed (`GET /v1/events`). */
export interface ChangeEventTable {
  org_id: string
  seq: number
  kind: string
  subject_type: string | null
  subject_id: string | null
  data: string | null
  created_at: string
}

/**
 * `change_audience`: who sees a change besides owners and admins (`events/change-audience.ts`),
 * written with the change.
 */
export interface ChangeAudienceTable {
  org_id: string
  seq: number
  /** `org`, `member:<id>`, `team:<id>` or `perm:<permission>`. */
  principal: string
  /** 1: the principal sees a bare `visibility.changed`; 0: the whole event. */
  hint: number
}

/** All control-plane tables. */
export interface ControlPlaneDb {
  change_event: ChangeEventTable
  change_audience: ChangeAudienceTable
  idempotency_key: IdempotencyKeyTable
  sign_in_throttle: SignInThrottleTable
  instance: InstanceTable
  app_user: UserTable
  user_session: SessionTable
  organization: OrganizationTable
  member: MemberTable
  invitation: InvitationTable
  api_key: ApiKeyTable
  team: TeamTable
  team_member: TeamMemberTable
  audit_event: AuditEventTable
  config_object: ConfigObjectTable
  config_object_version: ConfigObjectVersionTable
  config_object_term: ConfigObjectTermTable
  access_grant: AccessGrantTable
  plugin: CatalogContainerTable
  marketplace: CatalogContainerTable
  plugin_config_object: PluginConfigObjectTable
  marketplace_plugin: MarketplacePluginTable
  skill_hub: SkillHubTable
  skill_hub_skill: SkillHubSkillTable
  skill_hub_assignment: SkillHubAssignmentTable
  plugin_assignment: PluginAssignmentTable
  worker_delivery: WorkerDeliveryTable
  delivery_capability: DeliveryCapabilityTable
  llm_provider: LlmProviderTable
  job: JobTable
  worker: WorkerTable
  worker_token: WorkerTokenTable
  control_plane_instance: ControlPlaneInstanceTable
  connector_account: ConnectorAccountTable
  connector_instance: ConnectorInstanceTable
  connector_target: ConnectorTargetTable
  connector_mapping: ConnectorMappingTable
  connector_discovery: ConnectorDiscoveryTable
  connector_sync_event: ConnectorSyncEventTable
  connector_source_binding: ConnectorSourceBindingTable
  oauth_device_request: OAuthDeviceRequestTable
  oauth_grant: OAuthGrantTable
  oauth_token: OAuthTokenTable
  oauth_client: OAuthClientTable
  oauth_authorization: OAuthAuthorizationTable
  sso_connection: SsoConnectionTable
  sso_domain: SsoDomainTable
  sso_identity: SsoIdentityTable
  sso_login: SsoLoginTable
  org_admission_policy: OrgAdmissionPolicyTable
  scim_token: ScimTokenTable
  scim_user: ScimUserTable
  scim_group: ScimGroupTable
}

/** A control-plane database handle or an open transaction: what queries that may run in either take. */
export type Db = Kysely<ControlPlaneDb> | Transaction<ControlPlaneDb>
