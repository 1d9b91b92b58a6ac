/**
 * Discovery (spec §4 rule 1): read-only routes that tell a client what it is talking to.
 * None of them returns a token value, another caller's token hash or sidecar credentials.
 * @module
 */
import * as v from 'valibot'
import { routeFactory } from '../../core/route.ts'
import { VERSION } from '../../version.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import { SCOPES } from '../access/scopes.ts'
import { jsonText } from '../base/read-cache.ts'
import { workspaceView } from '../runtime/workspace-registry.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { WorkspaceSchema } from './schemas.ts'
import {
  reachability,
  SidecarOverviewSchema,
  SidecarReachabilitySchema,
  type SidecarReporter,
} from '../sidecar/sidecar-status-schema.ts'

const route = routeFactory<WorkspaceRule, Principal>()

const ApprovalPosture = v.object({ mode: v.picklist(['manual', 'auto']), timeoutMs: v.number() })
const ReadWrite = v.object({ read: v.boolean(), write: v.boolean() })

/** Whether any workspace or the server declares a sidecar (capability advertisement only). */
function sidecarConfigured(s: WorkspaceServices): boolean {
  return (
    Boolean((s.config.file as Record<string, unknown>).sidecar) ||
    s.config.workspaces.some((w) => Boolean(w.raw.sidecar))
  )
}

/** `/status`, `/capabilities`, `/workspaces`, `/whoami`. */
export function discoveryRoutes(s: WorkspaceServices, startedAt: number, sidecar?: SidecarReporter) {
  const write = !s.config.readOnly
  // The workspace list is fixed for the life of the process: serialise it once.
  const listed = s.config.workspaces.map(workspaceView)
  const workspacesBody = JSON.stringify({ items: listed, workspaces: listed, activeId: listed[0]?.id ?? null })
  return [
    route({
      method: 'GET',
      path: '/status',
      operationId: 'getStatus',
      summary: 'Runtime status',
      tags: ['discovery'],
      description: 'Version, uptime, approval posture, CORS origins and workspaces. Does not prove owner rights.',
      auth: rules.viewer,
      responses: {
        200: v.object({
          ok: v.literal(true),
          version: v.string(),
          uptimeMs: v.number(),
          readOnly: v.boolean(),
          approval: ApprovalPosture,
          corsOrigins: v.array(v.string()),
          workspaceCount: v.number(),
          activeWorkspaceId: v.nullable(v.string()),
          workspace: v.nullable(WorkspaceSchema),
          server: v.object({ host: v.string(), port: v.number(), configPath: v.nullable(v.string()) }),
          tokenSource: v.object({ client: v.string(), host: v.string() }),
          pendingApprovals: v.number(),
          sidecar: v.optional(SidecarOverviewSchema),
        }),
      },
      handler: async () => {
        const first = s.config.workspaces[0]
        return {
          ok: true as const,
          version: VERSION,
          uptimeMs: Math.round(performance.now() - startedAt),
          readOnly: s.config.readOnly,
          approval: s.approvals.settings,
          corsOrigins: s.config.corsOrigins,
          workspaceCount: s.config.workspaces.length,
          activeWorkspaceId: first?.id ?? null,
          workspace: first ? workspaceView(first) : null,
          server: {
            host: s.config.host,
            port: s.config.port,
            configPath: s.config.configFileFound ? s.config.configPath : null,
          },
          tokenSource: { client: s.config.tokenSource, host: s.config.hostTokenSource },
          pendingApprovals: s.approvals.list().length,
          ...(sidecar ? { sidecar: await sidecar.overview() } : {}),
        }
      },
    }),
    route({
      method: 'GET',
      path: '/capabilities',
      operationId: 'getCapabilities',
      summary: 'Advertised optional capabilities',
      tags: ['discovery'],
      description: 'What this server can do. Does not prove an integration is authorized.',
      auth: rules.viewer,
      responses: {
        200: v.object({
          schemaVersion: v.literal(1),
          serverVersion: v.string(),
          skills: v.object({ read: v.boolean(), write: v.boolean(), source: v.string() }),
          plugins: ReadWrite,
          mcp: ReadWrite,
          commands: ReadWrite,
          config: ReadWrite,
          approvals: ApprovalPosture,
          tokens: v.object({ scoped: v.boolean(), scopes: v.array(v.string()), expiry: v.boolean() }),
          events: v.object({ sse: v.boolean(), polling: v.boolean(), persisted: v.boolean() }),
          sandbox: v.object({ enabled: v.boolean(), backend: v.string() }),
          proxy: v.object({ sidecar: v.boolean(), workspaces: v.optional(SidecarReachabilitySchema) }),
          files: v.object({
            sessions: v.object({
              read: v.boolean(),
              write: v.boolean(),
              maxBatchItems: v.number(),
              maxFileBytes: v.number(),
              maxSessions: v.number(),
            }),
            inbox: v.object({
              enabled: v.boolean(),
              write: v.boolean(),
              path: v.string(),
              maxBytes: v.number(),
              requiresApproval: v.boolean(),
            }),
            outbox: v.object({ enabled: v.boolean(), path: v.string() }),
          }),
        }),
      },
      handler: async () => ({
        schemaVersion: 1 as const,
        serverVersion: VERSION,
        skills: { read: true, write, source: 'service' },
        plugins: { read: true, write },
        mcp: { read: true, write },
        commands: { read: true, write },
        config: { read: true, write },
        approvals: s.approvals.settings,
        tokens: { scoped: true, scopes: [...SCOPES].reverse(), expiry: true },
        events: { sse: true, polling: true, persisted: true },
        sandbox: { enabled: false, backend: 'none' },
        proxy: sidecar
          ? { sidecar: sidecar.anyConfigured, workspaces: reachability(await sidecar.overview()) }
          : { sidecar: sidecarConfigured(s) },
        files: {
          sessions: {
            read: true,
            write,
            maxBatchItems: s.config.files.maxBatchItems,
            maxFileBytes: s.config.files.maxFileBytes,
            maxSessions: s.config.files.maxSessions,
          },
          inbox: {
            enabled: s.config.files.inbox.enabled,
            write: write && s.config.files.inbox.enabled,
            path: '.opencode/service/inbox/',
            maxBytes: s.config.files.inbox.maxBytes,
            requiresApproval: s.config.files.inbox.requireApproval && s.approvals.settings.mode === 'manual',
          },
          outbox: { enabled: s.config.files.outbox.enabled, path: '.opencode/service/outbox/' },
        },
      }),
    }),
    route({
      method: 'GET',
      path: '/workspaces',
      operationId: 'listWorkspaces',
      summary: 'Workspaces visible to the caller',
      tags: ['discovery'],
      description:
        'The only place clients learn workspace ids. The first is the active one. Listing does not grant permission to alter.',
      auth: rules.viewer,
      responses: {
        200: v.object({
          items: v.array(WorkspaceSchema),
          workspaces: v.array(WorkspaceSchema),
          activeId: v.nullable(v.string()),
        }),
      },
      handler: () => jsonText(workspacesBody),
    }),
    route({
      method: 'GET',
      path: '/whoami',
      operationId: 'whoami',
      summary: 'The caller as this server sees it',
      tags: ['discovery'],
      description:
        "Scope and kind of the presented credential. The token hash shown is the caller's own. Not an organization identity.",
      auth: rules.viewer,
      responses: {
        200: v.object({
          ok: v.literal(true),
          actor: v.object({
            type: v.string(),
            scope: v.nullable(v.string()),
            tokenId: v.optional(v.string()),
            tokenHash: v.optional(v.string()),
            clientId: v.optional(v.string()),
          }),
        }),
      },
      handler: ({ principal }) => ({ ok: true as const, actor: { ...principal } }),
    }),
  ]
}
