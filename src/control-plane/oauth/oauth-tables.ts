/**
 * Table types of the authorization server (migration 0060).
 * @module
 */

/** `oauth_device_request`: one device authorization (RFC 8628), codes stored as SHA-256 only. */
export interface OAuthDeviceRequestTable {
  id: string
  device_code_hash: string
  user_code_hash: string
  client_id: string
  /** Space-separated granted scopes. */
  scope: string
  resource: string | null
  /** `pending | approved | denied | issued`; `expired` is derived from `expires_at`. */
  status: string
  interval_seconds: number
  last_polled_at: string | null
  /** Set on approval: the organization, member and user the tokens will act as. */
  org_id: string | null
  member_id: string | null
  user_id: string | null
  decided_at: string | null
  grant_id: string | null
  /** SHA-256 of the requesting client address (bounds pending requests per address), or null. */
  address_hash: string | null
  created_at: string
  expires_at: string
}

/** `oauth_client`: a dynamically registered public client (RFC 7591). */
export interface OAuthClientTable {
  id: string
  name: string
  /** JSON array of exact redirect URIs. */
  redirect_uris: string
  /** Space-separated scopes the client may ask for. */
  scope: string
  /** SHA-256 of the registering address (bounds registrations per address), or null. */
  address_hash: string | null
  created_at: string
}

/** `oauth_authorization`: one authorization code request (PKCE S256), from authorize to token. */
export interface OAuthAuthorizationTable {
  id: string
  client_id: string
  redirect_uri: string
  code_challenge: string
  scope: string
  resource: string | null
  state: string | null
  /** `pending | approved | denied | issued`; `expired` is derived from `expires_at`. */
  status: string
  /** Set on approval; the code is shown once, in the redirect. */
  code_hash: string | null
  org_id: string | null
  member_id: string | null
  user_id: string | null
  grant_id: string | null
  created_at: string
  /** Pending: when consent must be given by; approved: when the code expires. */
  expires_at: string
}

/** `oauth_grant`: one approval; its tokens live and die with it. */
export interface OAuthGrantTable {
  id: string
  org_id: string
  member_id: string
  user_id: string
  client_id: string
  client_name: string
  scope: string
  resource: string | null
  created_at: string
  /** When the grant's last usable token (the refresh token) expires; moves on rotation. */
  expires_at: string
  last_used_at: string | null
  revoked_at: string | null
  /** `member | admin | member_removed | refresh_reuse | code_reuse | client`. */
  revoked_reason: string | null
}

/** `oauth_token`: an access (`oat_`) or refresh (`ort_`) token of a grant, by its SHA-256. */
export interface OAuthTokenTable {
  id: string
  grant_id: string
  /** `access | refresh`. */
  kind: string
  token_hash: string
  created_at: string
  expires_at: string
  /** When a refresh token was exchanged (kept until its expiry, to recognise reuse). */
  ended_at: string | null
}
