/**
 * SCIM User attributes as this service keeps them: reading a full resource (POST, PUT), applying
 * PATCH operations in both their path form (`{"op":"replace","path":"active","value":"False"}`)
 * and their value-object form (`{"op":"replace","value":{"active":false}}`), and rendering a
 * stored row. Attributes it does not keep (the enterprise extension, phone numbers, addresses…)
 * are accepted and ignored, as identity providers send them whether or not they are mapped.
 * @module
 */
import { normalizeEmail } from '../identity/users-view.ts'
import type { ScimUserTable } from './scim-tables.ts'
import { scimError } from './scim-error.ts'
import { optionalString, scimBoolean, type PatchOperation, versionOf } from './scim-protocol.ts'

/** The core User schema. */
export const USER_URN = 'urn:ietf:params:scim:schemas:core:2.0:User'
const MAX_EMAILS = 10
const EMAIL = /^[^\s@]+@[^\s@]+$/

/** One of the `emails` values. */
export interface ScimEmail {
  value: string
  type?: string
  primary?: boolean
}

/** What a User resource sets. */
export interface ScimUserInput {
  userName: string
  externalId: string | null
  displayName: string | null
  givenName: string | null
  familyName: string | null
  emails: ScimEmail[] | null
  active: boolean
}

function userName(value: unknown): string {
  if (typeof value !== 'string' || value.length > 254 || !EMAIL.test(value.trim()))
    throw scimError('invalidValue', 'userName is the person’s email address')
  return normalizeEmail(value)
}

function emails(value: unknown): ScimEmail[] | null {
  if (value === undefined || value === null) return null
  if (!Array.isArray(value) || value.length > MAX_EMAILS)
    throw scimError('invalidValue', `emails is an array of at most ${MAX_EMAILS} entries`)
  return value.map((entry) => {
    if (typeof entry !== 'object' || entry === null) throw scimError('invalidValue', 'Each email is an object')
    const { value: address, type, primary } = entry as Record<string, unknown>
    const email = optionalString(address, 'emails.value', 254)
    if (email === null) throw scimError('invalidValue', 'Each email has a value')
    const out: ScimEmail = { value: email }
    const kind = optionalString(type, 'emails.type', 40)
    if (kind !== null) out.type = kind
    if (primary !== undefined && primary !== null) out.primary = scimBoolean(primary, 'emails.primary')
    return out
  })
}

/** Reads a full User resource (POST and PUT); `active` defaults to true. */
export function readUserResource(body: Record<string, unknown>): ScimUserInput {
  const name = (typeof body.name === 'object' && body.name !== null ? body.name : {}) as Record<string, unknown>
  return {
    userName: userName(body.userName),
    externalId: optionalString(body.externalId, 'externalId', 255),
    displayName: optionalString(body.displayName, 'displayName', 200),
    givenName: optionalString(name.givenName, 'name.givenName', 200),
    familyName: optionalString(name.familyName, 'name.familyName', 200),
    emails: emails(body.emails),
    active: body.active === undefined || body.active === null ? true : scimBoolean(body.active, 'active'),
  }
}

/** Sets one attribute (lower-cased path, schema URN removed) on `next`; unknown attributes are ignored. */
function setAttribute(next: ScimUserInput, path: string, value: unknown, op: PatchOperation['op']): void {
  const removing = op === 'remove'
  switch (path) {
    case 'username':
      if (removing) throw scimError('mutability', 'userName cannot be removed')
      next.userName = userName(value)
      return
    case 'active':
      if (removing) throw scimError('mutability', 'active cannot be removed; set it to false')
      next.active = scimBoolean(value, 'active')
      return
    case 'externalid':
      next.externalId = removing ? null : optionalString(value, 'externalId', 255)
      return
    case 'displayname':
      next.displayName = removing ? null : optionalString(value, 'displayName', 200)
      return
    case 'name.givenname':
      next.givenName = removing ? null : optionalString(value, 'name.givenName', 200)
      return
    case 'name.familyname':
      next.familyName = removing ? null : optionalString(value, 'name.familyName', 200)
      return
    case 'name': {
      if (removing || value === null) {
        next.givenName = null
        next.familyName = null
        return
      }
      if (typeof value !== 'object') throw scimError('invalidValue', 'name is an object')
      const name = value as Record<string, unknown>
      if ('givenName' in name) next.givenName = optionalString(name.givenName, 'name.givenName', 200)
      if ('familyName' in name) next.familyName = optionalString(name.familyName, 'name.familyName', 200)
      return
    }
    case 'emails':
      next.emails = removing ? null : op === 'add' ? [...(next.emails ?? []), ...(emails(value) ?? [])] : emails(value)
      if ((next.emails?.length ?? 0) > MAX_EMAILS) throw scimError('invalidValue', `At most ${MAX_EMAILS} emails`)
      return
  }
  // `emails[type eq "work"].value` (Entra): sets (or removes) the address of that type.
  const typed = /^emails\[type eq "([^"]{1,40})"\]\.value$/.exec(path)
  if (typed) {
    const type = typed[1]!
    const rest = (next.emails ?? []).filter((e) => e.type?.toLowerCase() !== type)
    const address = removing ? null : optionalString(value, 'emails.value', 254)
    next.emails = address === null ? rest : [...rest, { value: address, type, primary: rest.length === 0 }]
    return
  }
  // Other filters on emails cannot be applied faithfully; filters on attributes this service does
  // not keep (Entra's `addresses[type eq "work"].formatted`, `phoneNumbers[…]`) are ignored like them.
  if (path.startsWith('emails[')) throw scimError('invalidPath', `Unsupported path: ${path}`)
}

/** Strips the core User schema URN from a path or attribute name and lower-cases it. */
function bare(path: string): string {
  const lower = path.toLowerCase()
  const prefix = `${USER_URN.toLowerCase()}:`
  return lower.startsWith(prefix) ? lower.slice(prefix.length) : lower
}

/** Applies PATCH operations to the current attributes, returning the new ones. */
export function patchUser(current: ScimUserInput, operations: PatchOperation[]): ScimUserInput {
  const next: ScimUserInput = { ...current, emails: current.emails ? [...current.emails] : null }
  for (const operation of operations) {
    if (operation.path !== null) {
      setAttribute(next, bare(operation.path), operation.value, operation.op)
      continue
    }
    if (typeof operation.value !== 'object' || operation.value === null || Array.isArray(operation.value))
      throw scimError('invalidValue', 'An operation without a path has an object value')
    for (const [key, value] of Object.entries(operation.value as Record<string, unknown>))
      setAttribute(next, bare(key), value, operation.op)
  }
  return next
}

/** The stored attributes of a row. */
export function inputOf(row: ScimUserTable): ScimUserInput {
  return {
    userName: row.user_name,
    externalId: row.external_id,
    displayName: row.display_name,
    givenName: row.given_name,
    familyName: row.family_name,
    emails: row.emails ? (JSON.parse(row.emails) as ScimEmail[]) : null,
    active: row.active === 1,
  }
}

/** The account name for these attributes: displayName, else the full name, else the email's local part. */
export function accountNameOf(input: ScimUserInput): string {
  const full = [input.givenName, input.familyName].filter(Boolean).join(' ')
  return (input.displayName ?? (full || input.userName.split('@')[0]!)).slice(0, 120)
}

/** A stored row as its SCIM resource, `location` under `base` (`…/scim/v2`). */
export function userResource(row: ScimUserTable, base: string): Record<string, unknown> {
  const input = inputOf(row)
  const name: Record<string, string> = {}
  if (input.givenName) name.givenName = input.givenName
  if (input.familyName) name.familyName = input.familyName
  const formatted = [input.givenName, input.familyName].filter(Boolean).join(' ')
  if (formatted) name.formatted = formatted
  const resource: Record<string, unknown> = {
    schemas: [USER_URN],
    id: row.id,
    ...(input.externalId !== null ? { externalId: input.externalId } : {}),
    userName: input.userName,
    ...(Object.keys(name).length > 0 ? { name } : {}),
    ...(input.displayName !== null ? { displayName: input.displayName } : {}),
    emails: input.emails ?? [{ value: input.userName, type: 'work', primary: true }],
    active: input.active,
  }
  resource.meta = {
    resourceType: 'User',
    created: row.created_at,
    lastModified: row.updated_at,
    location: `${base}/Users/${row.id}`,
    version: versionOf(resource),
  }
  return resource
}
