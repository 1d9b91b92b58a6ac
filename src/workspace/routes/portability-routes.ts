/**
 * Export, import preview and import (spec §2, reference §1.13): the routes parse and shape; the
 * import itself (preview fingerprint, write gate, re-plan, all-or-nothing apply) is
 * `portability/workspace-import.ts`.
 * @module
 */
import * as v from 'valibot'
import type { Logger } from '../../core/logger.ts'
import { routeFactory } from '../../core/route.ts'
import { queryString } from '../../core/validation.ts'
import { actorOf } from '../events/audit-log.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import { scopeRank } from '../access/scopes.ts'
import type { FileService } from '../files/file-service.ts'
import { planImport, previewOf, type ImportPayload } from '../portability/import-plan.ts'
import { importWorkspace } from '../portability/workspace-import.ts'
import { buildExport, type SensitiveMode } from '../portability/workspace-export.ts'
import { SkillFileOut, SkillFilesIn } from '../../opencode/skill-wire.ts'
import { skillLimitsOf } from '../extensions/skills.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { JsonObject, WorkspaceParams, WRITE_ERRORS } from './schemas.ts'
import { workspaceError } from '../workspace-errors.ts'

const route = routeFactory<WorkspaceRule, Principal>()

const Mode = v.optional(v.picklist(['merge', 'replace']))
const ImportBody = v.object({
  mode: v.optional(v.object({ opencode: Mode, workspace: Mode, skills: Mode, commands: Mode, files: Mode })),
  opencode: v.optional(JsonObject),
  workspace: v.optional(JsonObject),
  skills: v.optional(
    v.array(
      v.object({
        name: v.string(),
        content: v.string(),
        description: v.optional(v.string()),
        files: v.optional(SkillFilesIn),
      }),
    ),
  ),
  commands: v.optional(
    v.array(
      v.object({
        name: v.optional(v.string()),
        template: v.optional(v.string()),
        content: v.optional(v.string()),
        description: v.optional(v.string()),
        agent: v.optional(v.string()),
        model: v.optional(v.nullable(v.string())),
        subtask: v.optional(v.boolean()),
      }),
    ),
  ),
  files: v.optional(v.array(v.object({ path: v.string(), content: v.string() }))),
  previewFingerprint: v.optional(v.unknown()),
})
const PreviewSchema = v.object({
  fingerprint: v.string(),
  summary: v.object({
    total: v.number(),
    create: v.number(),
    update: v.number(),
    replace: v.number(),
    delete: v.number(),
    unchanged: v.number(),
  }),
  changes: v.array(v.object({ kind: v.string(), action: v.string(), label: v.string(), path: v.string() })),
})
const ExportSchema = v.object({
  workspaceId: v.string(),
  exportedAt: v.number(),
  opencode: JsonObject,
  workspace: JsonObject,
  skills: v.array(
    v.object({ name: v.string(), description: v.string(), content: v.string(), files: v.array(SkillFileOut) }),
  ),
  commands: v.array(v.looseObject({ name: v.string(), template: v.string() })),
  files: v.array(v.object({ path: v.string(), content: v.string() })),
})

/** `/workspace/:id/export`, `/import/preview`, `/import`. */
export function portabilityRoutes(s: WorkspaceServices, files: FileService, logger: Logger) {
  return [
    route({
      method: 'GET',
      path: '/workspace/:id/export',
      operationId: 'exportWorkspace',
      summary: 'Export portable workspace configuration',
      tags: ['portability'],
      description:
        'Portable project-config keys, `.opencode/service.json`, skills (SKILL.md as `content` plus every other file of the folder as `files`: `{path, content}` for UTF-8 text or `{path, contentBase64}` for other bytes, `executable: true` when set, `sha256`), commands and files under `.opencode/agents|plugins|tools`. Text files of skills are scanned for secrets like everything else. `sensitive=auto` (default) answers 409 `workspace_export_requires_decision` with `details.warnings` when secrets are found; `exclude` strips them; `include` keeps them. MCP header and environment values, OAuth secrets and URL credentials are left out (names kept, values empty) whatever `sensitive` says, unless `mcpSecrets=include`: that needs the host token or an owner token (403 `mcp_secrets_host_only`) and the host approves it like a write (403 `export_denied`, 503 `server_stopping`).',
      auth: rules.viewer,
      params: WorkspaceParams,
      query: v.object({
        sensitive: queryString({ maxLength: 16 }),
        mcpSecrets: queryString({ maxLength: 16 }),
      }),
      responses: { 200: ExportSchema },
      errors: [403, 409, 422, 503],
      handler: async ({ request, params, query, principal }) => {
        const ws = s.workspaces.get(params.id)
        const mode = query.sensitive ?? 'auto'
        if (!['auto', 'include', 'exclude'].includes(mode))
          throw workspaceError('invalid_workspace_export_sensitive_mode', 'sensitive must be auto, include or exclude')
        const mcpSecrets = query.mcpSecrets === 'include'
        if (query.mcpSecrets !== undefined && !mcpSecrets && query.mcpSecrets !== 'exclude')
          throw workspaceError('invalid_query', 'mcpSecrets must be include or exclude')
        if (mcpSecrets) {
          if (scopeRank(principal.scope) < scopeRank('owner'))
            throw workspaceError('mcp_secrets_host_only', 'Only the host (or an owner token) can export MCP secrets')
          const outcome = await s.approvals.request(
            {
              workspaceId: ws.entry.id,
              action: 'workspace.export.mcp_secrets',
              summary: 'Export the workspace with MCP header and environment values',
              paths: [ws.entry.path],
              actor: actorOf(principal),
            },
            request.signal,
          )
          if (!outcome.allowed)
            throw workspaceError('export_denied', 'The host did not approve exporting MCP secrets', {
              details: { requestId: outcome.id, reason: outcome.reason },
            })
        }
        const doc = await buildExport(ws.entry.path, mode as SensitiveMode, { mcpSecrets })
        return { workspaceId: ws.entry.id, exportedAt: s.now(), ...doc }
      },
    }),
    route({
      method: 'POST',
      path: '/workspace/:id/import/preview',
      operationId: 'previewWorkspaceImport',
      summary: 'Preview an import (writes nothing)',
      tags: ['portability'],
      description:
        'Body: `{mode?:{opencode,workspace,skills,commands,files: "merge"|"replace"}, opencode?, workspace?, skills?, commands?, files?}`. A skill with `files` (as the export gives them, or `{path, contentBase64, executable?}`) makes its folder exactly SKILL.md plus those files; the preview lists each file (`kind: "skill-file"`). Returns the fingerprint to pass to `POST …/import`.',
      auth: rules.viewer,
      params: WorkspaceParams,
      body: ImportBody,
      responses: { 200: PreviewSchema },
      errors: [422],
      handler: async ({ params, body }) => {
        const ws = s.workspaces.get(params.id)
        return previewOf(await planImport(ws.entry.path, body as ImportPayload, skillLimitsOf(s.config.file)))
      },
    }),
    route({
      method: 'POST',
      path: '/workspace/:id/import',
      operationId: 'importWorkspace',
      summary: 'Import workspace configuration',
      tags: ['portability'],
      description:
        'Same body as the preview plus `previewFingerprint`. No changes → `{ok:true, preview}`. Changes without a fingerprint → 409 `workspace_import_preview_required`; a different fingerprint → 409 `workspace_import_preview_stale` (both carry `preview`). Approval action `config.import`; the plan is rebuilt after approval and must still match; applied all-or-nothing: a failure rolls everything back and answers 409 `import_target_conflict` (a target changed kind), 507 `import_storage_full`, 400 `invalid_path`, or the opaque 500 `import_failed`.',
      auth: rules.collaborator,
      params: WorkspaceParams,
      body: ImportBody,
      responses: { 200: v.object({ ok: v.literal(true), preview: PreviewSchema }) },
      errors: [400, ...WRITE_ERRORS, 500, 507],
      handler: async ({ request, params, body, principal }) => {
        const preview = await importWorkspace(
          { gate: s.gate, files, logger, skillLimits: skillLimitsOf(s.config.file) },
          {
            workspace: s.workspaces.get(params.id),
            principal,
            payload: body as ImportPayload,
            previewFingerprint: body.previewFingerprint,
            signal: request.signal,
          },
        )
        return { ok: true as const, preview }
      },
    }),
  ]
}
