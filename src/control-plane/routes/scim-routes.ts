/**
 * `/scim/v2`: SCIM 2.0 provisioning (RFC 7643, RFC 7644) for identity providers such as Okta and
 * Microsoft Entra, authenticated with the organization's SCIM token only. Every answer, errors
 * included, is `application/scim+json`; bodies are read here (SCIM or plain JSON media type) so
 * that even a malformed one is refused in SCIM's format.
 * @module
 */
import * as v from 'valibot'
import type { HandlerContext, RawBodySpec, ResponseSpec } from '../../core/route.ts'
import type { ControlPlanePrincipal } from '../auth.ts'
import { rules } from '../policy.ts'
import { serviceProviderConfig, resourceTypes, schemas } from '../scim/scim-discovery.ts'
import { asScimError, scimJson, scimStatusError } from '../scim/scim-error.ts'
import {
  createScimGroup,
  deleteScimGroup,
  getScimGroup,
  GROUP_FILTERS,
  listScimGroups,
  patchGroup,
  readGroupResource,
  updateScimGroup,
} from '../scim/scim-groups.ts'
import { listResponse, pageOf, parseFilter, patchOperations, readScimObject } from '../scim/scim-protocol.ts'
import { patchUser, readUserResource } from '../scim/scim-user-attributes.ts'
import {
  createScimUser,
  deleteScimUser,
  getScimUser,
  listScimUsers,
  updateScimUser,
  USER_FILTERS,
  type ScimContext,
} from '../scim/scim-users.ts'
import {
  ScimDiscovery,
  ScimErrorBody,
  ScimGroup,
  ScimGroupRequest,
  ScimPatchRequest,
  ScimUser,
  ScimUserRequest,
  scimListOf,
} from '../wire/scim.ts'
import { route, type RouteContext } from './route.ts'

const SCIM = 'application/scim+json'
type Context = HandlerContext<
  Record<string, string>,
  Record<string, string | undefined>,
  unknown,
  ControlPlanePrincipal
>

const ok = (description: string, schema: v.GenericSchema): ResponseSpec => ({
  description,
  schema,
  contentType: SCIM,
  headers: { ETag: 'The version of the resource (weak)' },
})
const failure = (description: string): ResponseSpec => ({ description, schema: ScimErrorBody, contentType: SCIM })
const ERRORS: Record<number, ResponseSpec> = {
  400: failure('scimType invalidFilter, invalidSyntax, invalidValue, invalidPath, noTarget, mutability or tooMany'),
  401: failure('No SCIM token, or a revoked or unknown one'),
}
const BY_ID: Record<number, ResponseSpec> = { ...ERRORS, 404: failure('No such resource in the organization') }
const WRITE: Record<number, ResponseSpec> = {
  409: failure('scimType uniqueness: the userName, externalId or displayName is taken'),
  412: failure('If-Match names another version'),
  413: failure('The body is over 1 MiB'),
  415: failure('The body is neither application/scim+json nor application/json'),
}
/** Creating or reactivating a User admits a person: the organization's admission policy may refuse. */
const ADMITS: Record<number, ResponseSpec> = {
  403: failure("The organization's admission policy refuses this person (SCIM not a way in, or the email's domain)"),
}
const body = (what: string, schema: v.GenericSchema): RawBodySpec => ({
  raw: true,
  contentType: SCIM,
  description: `${what} (application/scim+json or application/json, at most 1 MiB)`,
  schema,
})
const LIST_QUERY = v.object({
  filter: v.optional(v.pipe(v.string(), v.description('`attribute eq "value"`; see the operation for the attributes'))),
  startIndex: v.optional(v.pipe(v.string(), v.description('1-based index of the first result (default 1)'))),
  count: v.optional(v.pipe(v.string(), v.description('Results per page (default and maximum 200)'))),
  excludedAttributes: v.optional(v.pipe(v.string(), v.description('`members` leaves Group members out'))),
  attributes: v.optional(v.pipe(v.string(), v.description('Accepted; every attribute is returned'))),
})
const READ_QUERY = v.object({
  excludedAttributes: v.optional(v.pipe(v.string(), v.description('`members` leaves Group members out'))),
  attributes: v.optional(v.pipe(v.string(), v.description('Accepted; every attribute is returned'))),
})
const PATCH_DESCRIPTION =
  'RFC 7644 §3.5.2 `Operations` with `op` add, replace or remove (any case), each in path form (`{"op":"replace","path":"active","value":false}`) or value-object form (`{"op":"replace","value":{"active":false}}`).'

/** The SCIM routes. */
export function scimRoutes(ctx: RouteContext) {
  const base = (c: Context) => `${ctx.publicUrl ?? c.url.origin}/scim/v2`
  /** Runs an operation for the token's organization; every failure answers in SCIM's format. */
  const scim =
    (run: (s: ScimContext, c: Context) => Promise<Response> | Response) =>
    async (c: Context): Promise<Response> => {
      try {
        const token = c.principal.scim!
        const actor = {
          orgId: token.orgId,
          // The token acts: its creator is the person on record, its id stands for the member.
          userId: token.createdByUserId ?? token.tokenId,
          memberId: token.tokenId,
          role: 'owner' as const,
          credential: 'scim' as const,
          apiKeyId: null,
          origin: 'scim' as const,
        }
        return await run({ deps: ctx.deps, actor, base: base(c) }, c)
      } catch (error) {
        throw asScimError(error)
      }
    }
  const resource = (r: Record<string, unknown>, status = 200) => {
    const meta = r.meta as { version: string; location: string }
    return scimJson(
      r,
      status,
      status === 201 ? { etag: meta.version, location: meta.location } : { etag: meta.version },
    )
  }
  const withMembers = (c: Context) =>
    !(c.query.excludedAttributes ?? '').split(',').some((a) => a.trim().toLowerCase() === 'members')
  const discovery = (path: string, operationId: string, summary: string, answer: (c: Context) => unknown) =>
    route({
      method: 'GET',
      path: `/scim/v2${path}`,
      operationId,
      tags: ['scim'],
      summary,
      auth: rules.scim,
      responses: { 200: ok('The resource', ScimDiscovery), ...BY_ID },
      handler: scim((_s, c) => {
        const found = answer(c)
        if (found === undefined) throw scimStatusError(404, 'Not found')
        return scimJson(found)
      }),
    })
  const listed = (items: Record<string, unknown>) => listResponse(Object.values(items), Object.keys(items).length, 1)

  return [
    discovery('/ServiceProviderConfig', 'getScimServiceProviderConfig', 'What this SCIM service supports', (c) =>
      serviceProviderConfig(base(c), `${ctx.publicUrl ?? c.url.origin}/docs/scim.md`),
    ),
    discovery('/ResourceTypes', 'listScimResourceTypes', 'The SCIM resource types (User, Group)', (c) =>
      listed(resourceTypes(base(c))),
    ),
    discovery(
      '/ResourceTypes/:name',
      'getScimResourceType',
      'One SCIM resource type',
      (c) => resourceTypes(base(c))[c.params.name!],
    ),
    discovery('/Schemas', 'listScimSchemas', 'The SCIM schemas of Users and Groups', (c) => listed(schemas(base(c)))),
    discovery('/Schemas/:uri', 'getScimSchema', 'One SCIM schema, by its URN', (c) => schemas(base(c))[c.params.uri!]),

    route({
      method: 'GET',
      path: '/scim/v2/Users',
      operationId: 'listScimUsers',
      tags: ['scim'],
      summary: 'List or find SCIM Users',
      description:
        'Filters: `userName eq "…"` (case-insensitive), `externalId eq "…"`, `displayName eq "…"`; anything else is 400 `invalidFilter`. Pages by `startIndex` and `count`, in creation order, with `totalResults`.',
      auth: rules.scim,
      query: LIST_QUERY,
      responses: { 200: ok('A list response', scimListOf(ScimUser, 'ScimUserList')), ...ERRORS },
      handler: scim(async (s, c) => {
        const page = pageOf(c.url)
        const found = await listScimUsers(s, parseFilter(c.query.filter ?? null, USER_FILTERS), page)
        return scimJson(listResponse(found.resources, found.total, page.startIndex))
      }),
    }),
    route({
      method: 'POST',
      path: '/scim/v2/Users',
      operationId: 'createScimUser',
      tags: ['scim'],
      summary:
        'Provision a User: links the account with this email (creating it if none) and, when active, makes it a member',
      auth: rules.scim,
      body: body('A User resource; userName is the email address', ScimUserRequest),
      responses: { 201: ok('The created User', ScimUser), ...ERRORS, ...WRITE, ...ADMITS },
      handler: scim(async (s, c) =>
        resource(await createScimUser(s, readUserResource(await readScimObject(c.request))), 201),
      ),
    }),
    route({
      method: 'GET',
      path: '/scim/v2/Users/:id',
      operationId: 'getScimUser',
      tags: ['scim'],
      summary: 'Read a SCIM User',
      auth: rules.scim,
      query: READ_QUERY,
      responses: { 200: ok('The User', ScimUser), ...BY_ID },
      handler: scim(async (s, c) => resource(await getScimUser(s, c.params.id!))),
    }),
    route({
      method: 'PUT',
      path: '/scim/v2/Users/:id',
      operationId: 'replaceScimUser',
      tags: ['scim'],
      summary: 'Replace a SCIM User; `active: false` deprovisions',
      description:
        'Deactivation removes the membership, disables the member’s API keys, revokes their OAuth and device tokens and ends their sessions in the same transaction. userName cannot change (400 `mutability`).',
      auth: rules.scim,
      body: body('The full User resource', ScimUserRequest),
      responses: { 200: ok('The User', ScimUser), ...BY_ID, ...WRITE, ...ADMITS },
      handler: scim(async (s, c) => {
        const input = readUserResource(await readScimObject(c.request))
        return resource(await updateScimUser(s, c.params.id!, c.request, () => input))
      }),
    }),
    route({
      method: 'PATCH',
      path: '/scim/v2/Users/:id',
      operationId: 'patchScimUser',
      tags: ['scim'],
      summary: 'Change a SCIM User; `active` false (or "False") deprovisions',
      description: `${PATCH_DESCRIPTION} Attributes: userName (unchangeable), externalId, displayName, name.givenName, name.familyName, emails (also \`emails[type eq "work"].value\`), active (boolean or "True"/"False"). Attributes this service does not keep are ignored.`,
      auth: rules.scim,
      body: body('A PatchOp message', ScimPatchRequest),
      responses: { 200: ok('The User after the change', ScimUser), ...BY_ID, ...WRITE, ...ADMITS },
      handler: scim(async (s, c) => {
        const operations = patchOperations(await readScimObject(c.request))
        return resource(await updateScimUser(s, c.params.id!, c.request, (current) => patchUser(current, operations)))
      }),
    }),
    route({
      method: 'DELETE',
      path: '/scim/v2/Users/:id',
      operationId: 'deleteScimUser',
      tags: ['scim'],
      summary: 'Deprovision and forget a SCIM User (the account stays)',
      auth: rules.scim,
      responses: {
        204: { description: 'Deleted; the membership and its credentials are gone' },
        ...BY_ID,
        412: WRITE[412]!,
      },
      handler: scim(async (s, c) => {
        await deleteScimUser(s, c.params.id!, c.request)
        return new Response(null, { status: 204 })
      }),
    }),

    route({
      method: 'GET',
      path: '/scim/v2/Groups',
      operationId: 'listScimGroups',
      tags: ['scim'],
      summary: "List or find SCIM Groups (the organization's teams)",
      description:
        'Filters: `displayName eq "…"`, `externalId eq "…"`; anything else is 400 `invalidFilter`. `excludedAttributes=members` leaves members out.',
      auth: rules.scim,
      query: LIST_QUERY,
      responses: { 200: ok('A list response', scimListOf(ScimGroup, 'ScimGroupList')), ...ERRORS },
      handler: scim(async (s, c) => {
        const page = pageOf(c.url)
        const filter = parseFilter(c.query.filter ?? null, GROUP_FILTERS)
        const found = await listScimGroups(s, filter, page, withMembers(c))
        return scimJson(listResponse(found.resources, found.total, page.startIndex))
      }),
    }),
    route({
      method: 'POST',
      path: '/scim/v2/Groups',
      operationId: 'createScimGroup',
      tags: ['scim'],
      summary: 'Create a Group (a team), optionally with members',
      auth: rules.scim,
      body: body('A Group resource; members are User ids', ScimGroupRequest),
      responses: { 201: ok('The created Group', ScimGroup), ...ERRORS, ...WRITE },
      handler: scim(async (s, c) =>
        resource(await createScimGroup(s, readGroupResource(await readScimObject(c.request))), 201),
      ),
    }),
    route({
      method: 'GET',
      path: '/scim/v2/Groups/:id',
      operationId: 'getScimGroup',
      tags: ['scim'],
      summary: 'Read a SCIM Group',
      auth: rules.scim,
      query: READ_QUERY,
      responses: { 200: ok('The Group', ScimGroup), ...BY_ID },
      handler: scim(async (s, c) => resource(await getScimGroup(s, c.params.id!, withMembers(c)))),
    }),
    route({
      method: 'PUT',
      path: '/scim/v2/Groups/:id',
      operationId: 'replaceScimGroup',
      tags: ['scim'],
      summary: 'Replace a Group: its name and its provisioned members',
      description: 'Team members that provisioning does not manage are left in the team.',
      auth: rules.scim,
      body: body('The full Group resource', ScimGroupRequest),
      responses: { 200: ok('The Group', ScimGroup), ...BY_ID, ...WRITE },
      handler: scim(async (s, c) => {
        const input = readGroupResource(await readScimObject(c.request))
        return resource(await updateScimGroup(s, c.params.id!, c.request, () => input))
      }),
    }),
    route({
      method: 'PATCH',
      path: '/scim/v2/Groups/:id',
      operationId: 'patchScimGroup',
      tags: ['scim'],
      summary: 'Change a Group: add or remove members, rename',
      description: `${PATCH_DESCRIPTION} Paths: members (add, replace, remove with or without a value list), \`members[value eq "…"]\` (remove), displayName, externalId.`,
      auth: rules.scim,
      body: body('A PatchOp message', ScimPatchRequest),
      responses: { 200: ok('The Group after the change', ScimGroup), ...BY_ID, ...WRITE },
      handler: scim(async (s, c) => {
        const operations = patchOperations(await readScimObject(c.request))
        return resource(await updateScimGroup(s, c.params.id!, c.request, (current) => patchGroup(current, operations)))
      }),
    }),
    route({
      method: 'DELETE',
      path: '/scim/v2/Groups/:id',
      operationId: 'deleteScimGroup',
      tags: ['scim'],
      summary: 'Delete a Group (the team; its members stay in the organization)',
      auth: rules.scim,
      responses: { 204: { description: 'Deleted' }, ...BY_ID, 412: WRITE[412]! },
      handler: scim(async (s, c) => {
        await deleteScimGroup(s, c.params.id!, c.request)
        return new Response(null, { status: 204 })
      }),
    }),
  ]
}
