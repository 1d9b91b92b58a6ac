/**
 * Table types of the control-plane database (the kysely `DB` type). One interface per table,
 * in the column names the migrations create. Timestamps are ISO-8601 text; booleans 0/1.
 * @module
 */

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
  org_id: string
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
}

/** All control-plane tables. */
export interface ControlPlaneDb {
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
}
