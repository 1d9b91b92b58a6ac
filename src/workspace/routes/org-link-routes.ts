/**
 * The organization link of a workspace (host only): link by the device flow, read the link's
 * state, reconcile now, resolve a conflict, unlink. The link itself is `org-link/`.
 * @module
 */
import * as v from 'valibot'
import { routeFactory } from '../../core/route.ts'
import { queryBool } from '../../core/validation.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import type { OrgLinkService } from '../org-link/org-link-service.ts'
import { WorkspaceParams, WRITE_ERRORS } from './schemas.ts'

const route = routeFactory<WorkspaceRule, Principal>()

const ErrorInfo = v.nullable(v.object({ code: v.string(), message: v.string(), at: v.number() }))

const ConflictSchema = v.object({
  path: v.pipe(v.string(), v.description('workspace-relative file, skill folder, or `mcp/<name>`')),
  kind: v.picklist(['file', 'skill', 'mcp']),
  reason: v.picklist(['edited_locally', 'deleted_locally', 'local_file', 'local_skill', 'local_mcp']),
  objectId: v.string(),
  type: v.string(),
  name: v.string(),
  versionId: v.string(),
  localSha256: v.pipe(v.nullable(v.string()), v.description('what is on disk; null when nothing is')),
  organizationSha256: v.string(),
  detectedAt: v.number(),
})

const OrgViewSchema = v.object({
  controlPlaneUrl: v.string(),
  via: v.picklist(['device', 'worker']),
  organization: v.nullable(v.object({ id: v.string(), name: v.string() })),
  member: v.nullable(v.record(v.string(), v.unknown())),
  state: v.picklist(['linking', 'syncing', 'in_sync', 'conflict', 'revoked', 'unreachable']),
  lastSyncAt: v.nullable(v.number()),
  lastError: ErrorInfo,
  linking: v.nullable(
    v.object({
      userCode: v.string(),
      verificationUri: v.string(),
      verificationUriComplete: v.string(),
      expiresAt: v.number(),
    }),
  ),
  delivered: v.array(
    v.object({
      objectId: v.string(),
      type: v.string(),
      name: v.string(),
      versionId: v.string(),
      files: v.array(v.string()),
    }),
  ),
  conflicts: v.array(ConflictSchema),
  refused: v.array(v.object({ objectId: v.string(), name: v.string(), reason: v.string() })),
})

/** `/workspace/:id/org` routes. */
export function orgLinkRoutes(links: OrgLinkService) {
  return [
    route({
      method: 'POST',
      path: '/workspace/:id/org/link',
      operationId: 'linkOrganization',
      summary: 'Link the workspace to an organization (device flow)',
      tags: ['organization'],
      description:
        "Starts the OAuth device flow (RFC 8628, client `service-workspace`, scope `delivery:read`) at `controlPlaneUrl` and answers the code to approve in the control plane's console. The server polls in the background; `GET …/org` reports `linking` until the code is approved, then follows the organization. The token is stored sealed in the data dir and never answered. A revoked link is renewed in place (its manifest and choices are kept).",
      auth: rules.host,
      params: WorkspaceParams,
      body: v.object({ controlPlaneUrl: v.pipe(v.string(), v.maxLength(2048)) }),
      responses: {
        202: v.object({
          userCode: v.string(),
          verificationUri: v.string(),
          verificationUriComplete: v.string(),
          expiresIn: v.pipe(v.number(), v.description('seconds')),
          expiresAt: v.number(),
        }),
      },
      errors: [400, 403, 409, 502],
      handler: ({ params, body, principal }) => links.beginLink(params.id, body.controlPlaneUrl, principal),
    }),
    route({
      method: 'GET',
      path: '/workspace/:id/org',
      operationId: 'getOrganizationLink',
      summary: 'The organization link and its state',
      tags: ['organization'],
      description:
        '`state`: `linking` (code not approved yet), `syncing`, `in_sync`, `conflict` (see `conflicts`), `revoked` (401/403 from the control plane; delivered files stay until unlinked), `unreachable` (retried with backoff; nothing removed). `delivered` lists the managed items and their files; `refused` the items of the last delivery that were not written (bad paths, sizes, names) and why.',
      auth: rules.host,
      params: WorkspaceParams,
      responses: { 200: OrgViewSchema },
      errors: [404],
      handler: ({ params }) => links.view(params.id),
    }),
    route({
      method: 'POST',
      path: '/workspace/:id/org/sync',
      operationId: 'syncOrganization',
      summary: 'Reconcile with the organization now',
      tags: ['organization'],
      description:
        'Reads what is delivered and applies the change set (through approval in manual mode), also after a revoked or declined state; answers the link once done.',
      auth: rules.host,
      params: WorkspaceParams,
      responses: { 200: OrgViewSchema },
      errors: [403, 404],
      handler: ({ params }) => links.sync(params.id),
    }),
    route({
      method: 'POST',
      path: '/workspace/:id/org/conflicts/resolve',
      operationId: 'resolveOrganizationConflict',
      summary: "Resolve a conflict: keep local or take the organization's",
      tags: ['organization'],
      description:
        '`take: "local"` keeps the content as it is and stops managing it (asked again only when the organization publishes other content); `take: "organization"` writes the organization\'s content over it (a skill folder becomes exactly the delivered skill), through approval in manual mode.',
      auth: rules.host,
      params: WorkspaceParams,
      body: v.object({ path: v.pipe(v.string(), v.maxLength(4096)), take: v.picklist(['local', 'organization']) }),
      responses: { 200: OrgViewSchema },
      errors: [403, 404],
      handler: ({ params, body, principal }) => links.resolve(params.id, body.path, body.take, principal),
    }),
    route({
      method: 'DELETE',
      path: '/workspace/:id/org',
      operationId: 'unlinkOrganization',
      summary: 'Unlink the workspace',
      tags: ['organization'],
      description:
        'Stops following and forgets the token. Delivered files stay unless `remove=true`, which deletes those unchanged on disk (edited ones stay) through approval in manual mode.',
      auth: rules.host,
      params: WorkspaceParams,
      query: v.object({ remove: queryBool() }),
      responses: { 200: v.object({ ok: v.literal(true), removed: v.number() }) },
      errors: [...WRITE_ERRORS, 404],
      handler: async ({ params, query, principal, request }) => ({
        ok: true as const,
        ...(await links.unlink(params.id, query.remove === true, principal, request.signal)),
      }),
    }),
  ]
}
