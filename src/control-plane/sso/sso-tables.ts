/**
 * Table types of single sign-on and the admission policy (migration 0075).
 * @module
 */

/** `sso_connection`: an organization's OpenID Connect provider. */
export interface SsoConnectionTable {
  org_id: string
  slug: string
  display_name: string
  issuer: string
  client_id: string
  /** Sealed with the secret box, bound to the organization id; never returned. */
  client_secret_sealed: string
  /** JSON array of lower-case email domains. */
  allowed_domains: string
  default_role: string
  default_team_id: string | null
  created_at: string
  updated_at: string
}

/** `sso_domain`: an email domain routed to one organization's provider. */
export interface SsoDomainTable {
  domain: string
  org_id: string
}

/** `sso_identity`: the provider account (issuer, subject) linked to a user. */
export interface SsoIdentityTable {
  id: string
  issuer: string
  subject: string
  user_id: string
  created_at: string
  last_sign_in_at: string
}

/** `sso_login`: one sign-in attempt, used once. */
export interface SsoLoginTable {
  id: string
  org_id: string
  state_hash: string
  /** Sealed JSON `{nonce, verifier}`. */
  secrets_sealed: string
  return_to: string
  link_user_id: string | null
  status: string
  user_id: string | null
  handoff_hash: string | null
  created_at: string
  expires_at: string
}

/** `org_admission_policy`: how people may join an organization. */
export interface OrgAdmissionPolicyTable {
  org_id: string
  version: number
  allow_invitation: number
  allow_sso_jit: number
  allow_scim: number
  allowed_domains: string
  require_sso: number
  updated_by_member_id: string | null
  updated_at: string
}
