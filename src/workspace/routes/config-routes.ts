/**
 * Workspace config (read and approval-gated patch) and the audit log.
 * @module
 */
import * as v from 'valibot'
import { routeFactory } from '../../core/route.ts'
import { queryInt } from '../../core/validation.ts'
import { checkOpencodeConfig } from '../../opencode/opencode-config.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import { maskMcpMap } from '../config/mcp-maps.ts'
import { opencodeConfigRel, readOpencodeConfig } from '../config/opencode-config-file.ts'
import {
  applyConfigPatch,
  configPatchTexts,
  readServiceConfig,
  readWorkspaceConfig,
} from '../config/workspace-config.ts'
import { SERVICE_CONFIG_FILE } from '../config/workspace-layout.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { sameJson } from '../approvals/write-gate.ts'
import { AuditEntrySchema, JsonObject, WorkspaceParams, WRITE_ERRORS } from './schemas.ts'
import { workspaceError } from '../workspace-errors.ts'

const route = routeFactory<WorkspaceRule, Principal>()

/** `/workspace/:id/config` and `/workspace/:id/audit`. */
export function configRoutes(s: WorkspaceServices) {
  return [
    route({
      method: 'GET',
      path: '/workspace/:id/config',
      operationId: 'getWorkspaceConfig',
      summary: 'Read workspace config',
      tags: ['config'],
      description:
        '`opencode` from `opencode.jsonc` (else `opencode.json`), `workspace` from `.opencode/service.json`, `updatedAt` = time of the last audited write (epoch ms) or null. MCP header, environment, OAuth secret and URL credential values read as `********` (a PATCH that sends the mask back keeps the stored value).',
      auth: rules.viewer,
      params: WorkspaceParams,
      responses: { 200: v.object({ opencode: JsonObject, workspace: JsonObject, updatedAt: v.nullable(v.number()) }) },
      errors: [422],
      handler: ({ params }) => {
        const ws = s.workspaces.get(params.id)
        return ws.cache.jsonBody('config', async () => {
          const [config, updatedAt] = await Promise.all([
            readWorkspaceConfig(ws.entry.path, ws.cache),
            s.audit.latestTimestamp(ws.entry.id),
          ])
          // Bearer callers are never the host (it reads the file on its own disk): MCP header,
          // environment, OAuth secret and URL credential values are masked, as in GET …/mcp.
          const opencode =
            'mcp' in config.opencode ? { ...config.opencode, mcp: maskMcpMap(config.opencode.mcp) } : config.opencode
          return { ...config, opencode, updatedAt }
        })
      },
    }),
    route({
      method: 'PATCH',
      path: '/workspace/:id/config',
      operationId: 'patchWorkspaceConfig',
      summary: 'Update workspace config',
      tags: ['config'],
      description:
        'Replaces the given top-level `opencode` keys in place (comments and formatting kept; null removes a key; arrays are replaced) and shallow-merges `workspace` into `.opencode/service.json`. Approval-gated.',
      auth: rules.collaborator,
      params: WorkspaceParams,
      body: v.object({ opencode: v.optional(JsonObject), workspace: v.optional(JsonObject) }),
      responses: { 200: v.object({ updatedAt: v.number() }) },
      errors: WRITE_ERRORS,
      handler: async ({ request, params, body, principal }) => {
        s.gate.ensureWritable()
        const ws = s.workspaces.get(params.id)
        if (!body.opencode && !body.workspace)
          throw workspaceError('invalid_payload', 'opencode or workspace updates required')
        // A key OpenCode would refuse to load is refused here, before anyone is asked to approve it.
        const refused = checkOpencodeConfig(
          Object.fromEntries(Object.entries(body.opencode ?? {}).filter(([, value]) => value !== null)),
        )
        if (refused.length > 0)
          throw workspaceError(
            'invalid_payload',
            `Invalid opencode config at ${refused[0]!.path}: ${refused[0]!.message}`,
            { details: { issues: refused.map((issue) => ({ ...issue, path: `opencode.${issue.path}` })) } },
          )
        // A file that does not parse fails the patch now (422), not after the host approved it.
        const opencode = body.opencode ? (await readOpencodeConfig(ws.entry.path)).data : {}
        const service = body.workspace ? await readServiceConfig(ws.entry.path) : {}
        const same = (current: Record<string, unknown>, patch: Record<string, unknown> = {}) =>
          Object.entries(patch).every(([key, value]) =>
            value === null ? !(key in current) : sameJson(current[key], value),
          )
        const paths = [
          ...(body.opencode ? [await opencodeConfigRel(ws.entry.path)] : []),
          ...(body.workspace ? [SERVICE_CONFIG_FILE] : []),
        ]
        const keys = [
          ...Object.keys(body.opencode ?? {}),
          ...Object.keys(body.workspace ?? {}).map((k) => `workspace.${k}`),
        ]
        await s.gate.run({
          workspace: ws,
          principal,
          signal: request.signal,
          action: 'config.patch',
          summary: `Patch workspace config (${keys.join(', ') || 'no keys'})`,
          target: paths.join(', '),
          paths,
          reason: 'config',
          trigger: { type: 'config', name: paths[0], action: 'updated', path: paths[0] },
          apply: () => applyConfigPatch(ws.entry.path, body),
          changes: () => configPatchTexts(ws.entry.path, body),
          unchanged: async () => same(opencode, body.opencode) && same(service, body.workspace),
        })
        return { updatedAt: s.now() }
      },
    }),
    route({
      method: 'GET',
      path: '/workspace/:id/audit',
      operationId: 'listAudit',
      summary: 'Audit log, newest first',
      tags: ['audit'],
      auth: rules.viewer,
      params: WorkspaceParams,
      query: v.object({
        limit: queryInt({ min: 1, max: 200, default: 50, description: 'Entries to return (1-200, default 50)' }),
      }),
      responses: { 200: v.object({ items: v.array(AuditEntrySchema) }) },
      handler: async ({ params, query }) => {
        const ws = s.workspaces.get(params.id)
        return { items: await s.audit.list(ws.entry.id, query.limit ?? 50) }
      },
    }),
  ]
}
