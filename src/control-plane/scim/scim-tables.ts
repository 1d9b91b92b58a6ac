/**
 * Row types of the SCIM tables (migration 0080), beside the code that reads them; `schema.ts`
 * composes them into the database interface.
 * @module
 */

/** `scim_token`: an organization's SCIM bearer token, found by its SHA-256 (never stored in plain). */
export interface ScimTokenTable {
  id: string
  org_id: string
  name: string
  start: string
  token_hash: string
  created_by_user_id: string | null
  created_at: string
  last_used_at: string | null
}

/** `scim_user`: a SCIM User resource; links an account to the organization (member while `active`). */
export interface ScimUserTable {
  id: string
  org_id: string
  user_id: string
  /** Lower-cased userName (the account's email). */
  user_name: string
  external_id: string | null
  display_name: string | null
  given_name: string | null
  family_name: string | null
  /** JSON array of the provider's `emails`. */
  emails: string | null
  active: number
  /** 1 when provisioning created the account. */
  created_account: number
  created_at: string
  updated_at: string
}

/** `scim_group`: SCIM attributes of a team provisioned as a Group. */
export interface ScimGroupTable {
  team_id: string
  org_id: string
  external_id: string | null
}
