/**
 * The vocabulary of catalog access: which resources carry grants, the roles `viewer < editor <
 * manager` and how they compare, where each resource type lives and its 404. Owners and admins act
 * as manager everywhere. Grants themselves are in `access-grants.ts`, what a member can see as SQL
 * in `visibility-sql.ts`.
 * @module
 */
import type { Actor } from '../actor.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import type { ControlPlaneDb } from '../schema.ts'

/** Resources that carry access grants. */
export const RESOURCE_TYPES = [
  'config_object',
  'plugin',
  'marketplace',
  'skill_hub',
  'llm_provider',
  'connector_instance',
] as const
/** A resource type with grants. */
export type ResourceType = (typeof RESOURCE_TYPES)[number]
/** Grant roles, lowest first. */
export const GRANT_ROLES = ['viewer', 'editor', 'manager'] as const
/** A grant role. */
export type GrantRole = (typeof GRANT_ROLES)[number]

const RANK: Record<GrantRole, number> = { viewer: 1, editor: 2, manager: 3 }

/** The table holding each resource type and its 404 code. */
export const RESOURCE_TABLES = {
  config_object: { table: 'config_object', notFound: 'config_object_not_found', label: 'Config object' },
  plugin: { table: 'plugin', notFound: 'plugin_not_found', label: 'Plugin' },
  marketplace: { table: 'marketplace', notFound: 'marketplace_not_found', label: 'Marketplace' },
  skill_hub: { table: 'skill_hub', notFound: 'skill_hub_not_found', label: 'Skill hub' },
  llm_provider: { table: 'llm_provider', notFound: 'llm_provider_not_found', label: 'Model provider' },
  connector_instance: {
    table: 'connector_instance',
    notFound: 'connector_instance_not_found',
    label: 'Connector instance',
  },
} as const satisfies Record<ResourceType, { table: keyof ControlPlaneDb; notFound: string; label: string }>

/** The 404 for a resource the caller cannot see (or that does not exist: indistinguishable). */
export function notFound(type: ResourceType) {
  return controlPlaneError(RESOURCE_TABLES[type].notFound, `${RESOURCE_TABLES[type].label} not found`)
}

/** True for owners and admins, who act as manager on every catalog resource. */
export function isOrgAdmin(actor: Pick<Actor, 'role'>): boolean {
  return actor.role === 'owner' || actor.role === 'admin'
}

/** The higher of two roles (null is below viewer). */
export function maxRole(a: GrantRole | null, b: GrantRole | null): GrantRole | null {
  if (!a) return b
  if (!b) return a
  return RANK[a] >= RANK[b] ? a : b
}

/** True when `role` is at least `min`. */
export function atLeast(role: GrantRole | null, min: GrantRole): boolean {
  return role !== null && RANK[role] >= RANK[min]
}
