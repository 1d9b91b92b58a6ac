/**
 * Who may do what: the built-in roles, the permission catalog, and the one policy table that
 * every organization route names. The authenticator enforces it, `GET /v1/roles` publishes it,
 * the OpenAPI document annotates each operation with it, and the role-matrix test is generated
 * from it, so none of them can drift from the others.
 * @module
 */
import type { OAuthScope } from './oauth/oauth-scopes.ts'

/** Built-in organization roles, highest first. */
export const ROLES = ['owner', 'admin', 'member'] as const
/** An organization role. */
export type Role = (typeof ROLES)[number]
/** Roles that can be given by invitation or role change; ownership is never handed out that way. */
export const ASSIGNABLE_ROLES = ['admin', 'member'] as const
/** An assignable role. */
export type AssignableRole = (typeof ASSIGNABLE_ROLES)[number]

/** One permission: which roles hold it, and whether an API key (acting as its member) may use it. */
export interface PermissionPolicy {
  description: string
  roles: readonly Role[]
  /** False for actions that need a person: keys cannot mint keys. */
  apiKey: boolean
  /**
   * The OAuth scopes that let a token use this permission (any one of them); none: no OAuth token
   * may, whatever its member's role. A token never exceeds its member's role either.
   */
  scopes?: readonly OAuthScope[]
}

const ALL: readonly Role[] = ['owner', 'admin', 'member']
const ADMINS: readonly Role[] = ['owner', 'admin']
const OWNER: readonly Role[] = ['owner']
/** Scopes that read the catalog (a writer reads too). */
const CATALOG_READ: readonly OAuthScope[] = ['catalog:read', 'catalog:write']

/** The policy table. Keys are `area.action`. */
export const POLICY = {
  'org.read': { description: 'Read the current organization', roles: ALL, apiKey: true },
  'delivery.read': {
    description: 'Read what the organization delivers to the caller (skills, agents, commands, MCP servers)',
    roles: ALL,
    apiKey: true,
    scopes: ['delivery:read', 'catalog:read', 'catalog:write'],
  },
  'org.update': { description: 'Rename and configure the organization', roles: ADMINS, apiKey: true },
  'sso.manage': {
    description: "Configure the organization's single sign-on connection (OpenID Connect)",
    roles: OWNER,
    apiKey: false,
  },
  'sso.link': {
    description: "Link your account to the organization's identity provider",
    roles: ALL,
    apiKey: false,
  },
  'admission.manage': {
    description: 'Read and change the admission policy (ways in, domains, requiring SSO)',
    roles: OWNER,
    apiKey: false,
  },
  'members.read': { description: 'List and read members', roles: ALL, apiKey: true },
  'members.update_role': { description: "Change a member's role", roles: OWNER, apiKey: false },
  'members.transfer_ownership': {
    description: 'Hand ownership to another member (the owner becomes an admin)',
    roles: OWNER,
    apiKey: false,
  },
  'members.remove': { description: 'Remove a member from the organization', roles: ADMINS, apiKey: true },
  'invitations.read': { description: 'List and read invitations', roles: ADMINS, apiKey: true },
  'invitations.manage': { description: 'Create and cancel invitations', roles: ADMINS, apiKey: true },
  'teams.read': { description: 'List and read teams and their members', roles: ALL, apiKey: true },
  'teams.manage': { description: 'Create, change and delete teams and their membership', roles: ADMINS, apiKey: true },
  'roles.read': { description: 'Read the roles and what each may do', roles: ALL, apiKey: true },
  'api_keys.read': { description: "List the organization's API keys", roles: ADMINS, apiKey: true },
  'api_keys.manage': { description: 'Create and revoke API keys', roles: ADMINS, apiKey: false },
  'audit.read': { description: 'Read audit events', roles: ADMINS, apiKey: true },
  'scim_tokens.manage': {
    description: "Create, list and revoke the organization's SCIM provisioning tokens",
    roles: OWNER,
    apiKey: false,
  },
  'oauth_tokens.own': {
    description: 'List and revoke your own OAuth tokens (device sign-ins, MCP clients)',
    roles: ALL,
    apiKey: true,
  },
  'oauth_tokens.read': { description: "List the organization's OAuth tokens", roles: ADMINS, apiKey: true },
  'oauth_tokens.manage': { description: "Revoke any of the organization's OAuth tokens", roles: ADMINS, apiKey: true },
  'config_objects.read': {
    description: 'List and read the config objects, versions and resolved forms the caller has access to',
    roles: ALL,
    apiKey: true,
    scopes: CATALOG_READ,
  },
  'config_objects.write': {
    description: 'Create config objects; change those the caller edits or manages (per-object grants decide)',
    roles: ALL,
    apiKey: true,
    scopes: ['catalog:write'],
  },
  'plugins.read': {
    description: 'List and read the plugins the caller has access to',
    roles: ALL,
    apiKey: true,
    scopes: CATALOG_READ,
  },
  'plugins.write': {
    description: 'Create plugins; change those the caller edits or manages (per-plugin grants decide)',
    roles: ALL,
    apiKey: true,
  },
  'marketplaces.read': {
    description: 'List and read the marketplaces the caller has access to',
    roles: ALL,
    apiKey: true,
    scopes: CATALOG_READ,
  },
  'marketplaces.create': { description: 'Create marketplaces', roles: ADMINS, apiKey: true },
  'marketplaces.write': {
    description: 'Change the marketplaces the caller edits or manages (per-marketplace grants decide)',
    roles: ALL,
    apiKey: true,
  },
  'skill_hubs.read': {
    description: 'List and read skill hubs and the skills the caller receives',
    roles: ALL,
    apiKey: true,
    scopes: CATALOG_READ,
  },
  'skill_hubs.write': {
    description: 'Create skill hubs; change those the caller edits or manages (per-hub grants decide)',
    roles: ALL,
    apiKey: true,
  },
  'llm_providers.read': {
    description: 'Read the model-provider catalog and the providers the caller has access to (never their keys)',
    roles: ALL,
    apiKey: true,
  },
  'llm_providers.write': {
    description: 'Create model providers; change those the caller manages (per-provider grants decide)',
    roles: ALL,
    apiKey: true,
  },
  'llm_providers.credential': {
    description: "Read a provider's API key; needs an explicit grant on the provider, and every read is audited",
    roles: ALL,
    apiKey: true,
  },
  'jobs.read': {
    description: 'List and read asynchronous jobs (discovery, sync, Worker provisioning)',
    roles: ADMINS,
    apiKey: true,
  },
  'jobs.manage': { description: 'Retry failed jobs', roles: ADMINS, apiKey: true },
  'workers.read': { description: 'List and read Workers and their runtime status', roles: ALL, apiKey: true },
  'workers.manage': { description: 'Create and delete Workers; list their tokens', roles: ADMINS, apiKey: true },
  'workers.tokens': {
    description: 'Issue and revoke Worker token sets (credentials, so a person must do it)',
    roles: ADMINS,
    apiKey: false,
  },
  'connectors.read': {
    description:
      'Read connector accounts and the connector instances (with targets, mappings, discoveries and sync events) the caller has access to',
    roles: ALL,
    apiKey: true,
  },
  'connectors.create': {
    description: 'Create, change and delete connector accounts; create connector instances',
    roles: ADMINS,
    apiKey: true,
  },
  'connectors.write': {
    description:
      'Change connector instances the caller edits or manages (per-instance grants decide): targets, mappings, discovery, sync, retry',
    roles: ALL,
    apiKey: true,
  },
} as const satisfies Record<string, PermissionPolicy>

/** A permission key from the policy table. */
export type Permission = keyof typeof POLICY

/** Every permission key, in table order. */
export const PERMISSIONS = Object.keys(POLICY) as Permission[]

/**
 * A control-plane route's auth rule.
 * - `public`: no credential.
 * - `identity`: any signed-in caller (session or API key); the organization is resolved when one
 *   is available but not required (`GET /v1/me`). `sessionOnly` refuses API keys with 403.
 * - `org`: a caller acting in an organization, holding `permission` by the policy table. With
 *   `worker`, a Worker's runtime presenting its activity token (`wka_…`) is accepted too, as a
 *   Worker principal (no member, no role): the route answers for that Worker.
 *
 * `oauthScopes` names the OAuth scopes that may call the route: for `identity` routes, where no
 * permission decides, none means no OAuth token; for `org` routes it replaces the permission's
 * scopes on that one route (the change feed reads with `config_objects.read` but is also what
 * `delivery:read` follows).
 */
export type ControlPlaneRule =
  | { kind: 'public' }
  | { kind: 'identity'; sessionOnly?: boolean; oauthScopes?: readonly OAuthScope[] }
  | {
      kind: 'org'
      permission: Permission
      worker?: true
      oauthScopes?: readonly OAuthScope[]
      /**
       * The `WWW-Authenticate` value a 401 of this route carries (RFC 6750 §3; the MCP endpoint names
       * its protected-resource metadata there so OAuth clients can discover the authorization server).
       */
      challenge?: (request: Request) => string
      /**
       * Also take an API key as `Authorization: Bearer svc_…` (the MCP endpoint: some MCP clients
       * can only send a bearer token). Elsewhere a key sent that way is refused with a hint.
       */
      apiKeyAsBearer?: true
    }
  | { kind: 'workerToken' }
  /** An identity provider presenting the organization's SCIM token (`/scim/v2/*`); nothing else passes. */
  | { kind: 'scim' }

/** Shorthands for route declarations. */
export const rules = {
  public: { kind: 'public' } as ControlPlaneRule,
  identity: { kind: 'identity' } as ControlPlaneRule,
  /** Any signed-in caller, including an OAuth token with any scope (`GET /v1/me`, `GET /v1/me/orgs`). */
  identityAnyScope: {
    kind: 'identity',
    oauthScopes: ['delivery:read', 'catalog:read', 'catalog:write'],
  } as ControlPlaneRule,
  session: { kind: 'identity', sessionOnly: true } as ControlPlaneRule,
  org: (permission: Permission, options: { oauthScopes?: readonly OAuthScope[] } = {}): ControlPlaneRule =>
    options.oauthScopes ? { kind: 'org', permission, oauthScopes: options.oauthScopes } : { kind: 'org', permission },
  /** An org route that a Worker's runtime may also call with its activity token. */
  orgOrWorker: (permission: Permission, options: { oauthScopes?: readonly OAuthScope[] } = {}): ControlPlaneRule => ({
    ...(rules.org(permission, options) as Extract<ControlPlaneRule, { kind: 'org' }>),
    worker: true,
  }),
  /** A Worker runtime presenting its activity token (checked against the Worker in the path). */
  workerToken: { kind: 'workerToken' } as ControlPlaneRule,
  /** An organization's SCIM bearer token (`scim_…`). */
  scim: { kind: 'scim' } as ControlPlaneRule,
}

/** The caller kinds the policy distinguishes. */
export type CredentialKind = 'session' | 'apiKey' | 'oauth'

/**
 * True when a caller with `role` using `credential` holds `permission`; an OAuth token also needs
 * one of the permission's scopes among `scopes` (or among `routeScopes`, a route's own list).
 */
export function allows(
  permission: Permission,
  role: Role,
  credential: CredentialKind,
  scopes: readonly OAuthScope[] = [],
  routeScopes?: readonly OAuthScope[],
): boolean {
  const policy: PermissionPolicy = POLICY[permission]
  if (credential === 'apiKey' && !policy.apiKey) return false
  if (credential === 'oauth' && !scopesCover(routeScopes ?? policy.scopes, scopes)) return false
  return policy.roles.includes(role)
}

/** True when a token holding `granted` has one of the `needed` scopes. */
export function scopesCover(needed: readonly OAuthScope[] | undefined, granted: readonly OAuthScope[]): boolean {
  return (needed ?? []).some((scope) => granted.includes(scope))
}

/** The permissions a role holds with a credential kind (and an OAuth token's scopes), in table order. */
export function permissionsOf(
  role: Role,
  credential: CredentialKind = 'session',
  scopes: readonly OAuthScope[] = [],
): Permission[] {
  return PERMISSIONS.filter((p) => allows(p, role, credential, scopes))
}

/** Narrows a stored role string; unknown values are treated as the least privileged role. */
export function asRole(value: string): Role {
  return (ROLES as readonly string[]).includes(value) ? (value as Role) : 'member'
}
