/**
 * Token governance (host): list, issue (value shown once, optional expiry) and revoke.
 * @module
 */
import * as v from 'valibot'
import { routeFactory } from '../../core/route.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import { SCOPES, type Scope } from '../access/scopes.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { workspaceError } from '../workspace-errors.ts'

const route = routeFactory<WorkspaceRule, Principal>()

const TokenInfoSchema = v.object({
  id: v.string(),
  scope: v.picklist(SCOPES),
  label: v.nullable(v.string()),
  createdAt: v.number(),
  expiresAt: v.nullable(v.number()),
  lastUsedAt: v.nullable(v.number()),
})

/** Longest allowed token lifetime: one year. */
const MAX_TTL_SECONDS = 365 * 24 * 3600

/** `/tokens` routes. */
export function tokenRoutes(s: WorkspaceServices) {
  return [
    route({
      method: 'GET',
      path: '/tokens',
      operationId: 'listTokens',
      summary: 'List issued tokens',
      tags: ['tokens'],
      description: 'Ids, scopes, labels and times. Never a token value or hash.',
      auth: rules.host,
      responses: { 200: v.object({ items: v.array(TokenInfoSchema) }) },
      handler: () => ({ items: s.tokens.list() }),
    }),
    route({
      method: 'POST',
      path: '/tokens',
      operationId: 'createToken',
      summary: 'Issue a token',
      tags: ['tokens'],
      description: 'The plaintext `token` appears in this response only. `ttlSeconds` sets an expiry (1 s to 1 year).',
      auth: rules.host,
      body: v.object({
        scope: v.string(),
        label: v.optional(v.pipe(v.string(), v.maxLength(200))),
        ttlSeconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_TTL_SECONDS))),
      }),
      responses: { 201: v.object({ ...TokenInfoSchema.entries, token: v.string() }) },
      errors: [403],
      handler: async ({ body }) => {
        s.gate.ensureWritable()
        if (!(SCOPES as readonly string[]).includes(body.scope))
          throw workspaceError('invalid_scope', 'Token scope must be owner, collaborator, or viewer')
        return s.tokens.create({ scope: body.scope as Scope, label: body.label, ttlSeconds: body.ttlSeconds })
      },
    }),
    route({
      method: 'DELETE',
      path: '/tokens/:tokenId',
      operationId: 'revokeToken',
      summary: 'Revoke a token',
      tags: ['tokens'],
      auth: rules.host,
      params: v.object({ tokenId: v.pipe(v.string(), v.maxLength(128)) }),
      responses: { 200: v.object({ ok: v.literal(true) }) },
      errors: [403],
      handler: async ({ params }) => {
        s.gate.ensureWritable()
        if (!(await s.tokens.revoke(params.tokenId))) throw workspaceError('token_not_found', 'Token not found')
        return { ok: true as const }
      },
    }),
  ]
}
