/**
 * MCP routes: list (masked), add or replace (POST), enable/disable (PATCH), remove (DELETE);
 * writes are approval-gated.
 * @module
 */
import * as v from 'valibot'
import { routeFactory } from '../../core/route.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import {
  listMcp,
  mcpEntries,
  removeMcp,
  setMcpEnabled,
  upsertMcp,
  validateMcpConfig,
  validateMcpName,
} from '../extensions/mcp.ts'
import { configChange, opencodeConfigRel, readOpencodeConfig } from '../config/opencode-config-file.ts'
import { cachedOpencodeConfig } from '../config/workspace-config.ts'
import type { WorkspaceRuntime } from '../events/workspace-runtime.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { sameJson } from '../approvals/write-gate.ts'
import { JsonObject, NamedParams, WorkspaceParams, WRITE_ERRORS } from './schemas.ts'
import { workspaceError } from '../workspace-errors.ts'

const route = routeFactory<WorkspaceRule, Principal>()

const McpItems = v.array(v.object({ name: v.string(), config: JsonObject, source: v.literal('config.project') }))

function cachedItems(ws: WorkspaceRuntime) {
  return ws.cache.get('mcp', async () => listMcp((await cachedOpencodeConfig(ws.entry.path, ws.cache)).data))
}

/** `/workspace/:id/mcp` routes. */
export function mcpRoutes(s: WorkspaceServices) {
  return [
    route({
      method: 'GET',
      path: '/workspace/:id/mcp',
      operationId: 'listMcp',
      summary: 'List MCP servers',
      tags: ['mcp'],
      description:
        'Entries of the config `mcp` map. Header and environment values, OAuth secrets and URL credentials are masked.',
      auth: rules.viewer,
      params: WorkspaceParams,
      responses: { 200: v.object({ items: McpItems }) },
      errors: [422],
      handler: ({ params }) => {
        const ws = s.workspaces.get(params.id)
        return ws.cache.jsonBody('mcp', async () => ({ items: await cachedItems(ws) }))
      },
    }),
    route({
      method: 'POST',
      path: '/workspace/:id/mcp',
      operationId: 'addMcp',
      summary: 'Add or replace an MCP server',
      tags: ['mcp'],
      description: '`local` needs a non-empty `command` array of strings; `remote` an http(s) `url`. Approval-gated.',
      auth: rules.collaborator,
      params: WorkspaceParams,
      body: v.object({ name: v.string(), config: v.optional(JsonObject) }),
      responses: { 200: v.object({ items: McpItems }) },
      errors: WRITE_ERRORS,
      handler: async ({ request, params, body, principal }) => {
        s.gate.ensureWritable()
        const ws = s.workspaces.get(params.id)
        const name = validateMcpName(body.name)
        if (!body.config) throw workspaceError('invalid_payload', 'MCP config is required')
        const config = validateMcpConfig(body.config)
        const current = mcpEntries((await readOpencodeConfig(ws.entry.path)).data)[name]
        const exists = Boolean(current)
        await s.gate.run({
          workspace: ws,
          principal,
          signal: request.signal,
          action: 'mcp.add',
          summary: `${exists ? 'Updated' : 'Added'} MCP ${name}`,
          target: name,
          paths: [await opencodeConfigRel(ws.entry.path)],
          reason: 'mcp',
          trigger: { type: 'mcp', name, action: exists ? 'updated' : 'added' },
          apply: () => upsertMcp(ws.entry.path, name, config),
          changes: () => configChange(ws.entry.path, [{ path: ['mcp', name], value: config }]),
          unchanged: async () => sameJson(current, config),
        })
        return { items: await cachedItems(ws) }
      },
    }),
    route({
      method: 'PATCH',
      path: '/workspace/:id/mcp/:name',
      operationId: 'updateMcp',
      summary: 'Enable or disable an MCP server',
      tags: ['mcp'],
      description: 'A no-op (already in that state) answers `changed:false` and records nothing. Approval-gated.',
      auth: rules.collaborator,
      params: NamedParams,
      body: v.object({ enabled: v.boolean() }),
      responses: { 200: v.object({ changed: v.boolean(), enabled: v.boolean(), items: McpItems }) },
      errors: WRITE_ERRORS,
      handler: async ({ request, params, body, principal }) => {
        s.gate.ensureWritable()
        const ws = s.workspaces.get(params.id)
        const name = validateMcpName(params.name)
        const entry = mcpEntries((await readOpencodeConfig(ws.entry.path)).data)[name]
        if (!entry) throw workspaceError('mcp_not_found', `MCP ${name} not found`)
        const current = entry.enabled !== false
        if (current === body.enabled) return { changed: false, enabled: current, items: await cachedItems(ws) }
        await s.gate.run({
          workspace: ws,
          principal,
          signal: request.signal,
          action: 'mcp.update',
          summary: `${body.enabled ? 'Enabled' : 'Paused'} MCP ${name}`,
          target: name,
          paths: [await opencodeConfigRel(ws.entry.path)],
          reason: 'mcp',
          trigger: { type: 'mcp', name, action: 'updated' },
          apply: () => setMcpEnabled(ws.entry.path, name, body.enabled),
          changes: () => configChange(ws.entry.path, [{ path: ['mcp', name, 'enabled'], value: body.enabled }]),
        })
        return { changed: true, enabled: body.enabled, items: await cachedItems(ws) }
      },
    }),
    route({
      method: 'DELETE',
      path: '/workspace/:id/mcp/:name',
      operationId: 'removeMcp',
      summary: 'Remove an MCP server',
      tags: ['mcp'],
      auth: rules.collaborator,
      params: NamedParams,
      responses: { 200: v.object({ items: McpItems }) },
      errors: [400, ...WRITE_ERRORS],
      handler: async ({ request, params, principal }) => {
        s.gate.ensureWritable()
        const ws = s.workspaces.get(params.id)
        const name = validateMcpName(params.name)
        if (!mcpEntries((await readOpencodeConfig(ws.entry.path)).data)[name])
          throw workspaceError('mcp_not_found', `MCP ${name} not found`)
        await s.gate.run({
          workspace: ws,
          principal,
          signal: request.signal,
          action: 'mcp.remove',
          summary: `Removed MCP ${name}`,
          target: name,
          paths: [await opencodeConfigRel(ws.entry.path)],
          reason: 'mcp',
          trigger: { type: 'mcp', name, action: 'removed' },
          apply: () => removeMcp(ws.entry.path, name),
          changes: () => configChange(ws.entry.path, [{ path: ['mcp', name], value: undefined }]),
        })
        return { items: await cachedItems(ws) }
      },
    }),
  ]
}
