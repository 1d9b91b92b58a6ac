/**
 * Command routes: list, add or replace (POST), remove (DELETE); writes are approval-gated.
 * @module
 */
import * as v from 'valibot'
import { routeFactory } from '../../core/route.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import {
  deleteCommand,
  loadCommands,
  prepareCommand,
  sanitizeCommandName,
  writeCommand,
} from '../extensions/commands.ts'
import { commandFile } from '../config/workspace-layout.ts'
import type { WorkspaceRuntime } from '../events/workspace-runtime.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { fileHolds } from '../approvals/write-gate.ts'
import { NamedParams, WorkspaceParams, WRITE_ERRORS } from './schemas.ts'
import { workspaceError } from '../workspace-errors.ts'

const route = routeFactory<WorkspaceRule, Principal>()

const CommandItems = v.array(
  v.object({
    name: v.string(),
    description: v.optional(v.string()),
    template: v.string(),
    agent: v.optional(v.string()),
    model: v.nullable(v.string()),
    subtask: v.optional(v.boolean()),
    scope: v.literal('workspace'),
  }),
)

function cachedCommands(ws: WorkspaceRuntime) {
  return ws.cache.get('commands', () => loadCommands(ws.entry.path))
}

/** `/workspace/:id/commands` routes. */
export function commandRoutes(s: WorkspaceServices) {
  return [
    route({
      method: 'GET',
      path: '/workspace/:id/commands',
      operationId: 'listCommands',
      summary: 'List commands',
      tags: ['commands'],
      description: 'Commands in `.opencode/commands/<name>.md`; `template` is the trimmed body.',
      auth: rules.viewer,
      params: WorkspaceParams,
      responses: { 200: v.object({ items: CommandItems }) },
      handler: ({ params }) => {
        const ws = s.workspaces.get(params.id)
        return ws.cache.jsonBody('commands', async () => ({ items: await cachedCommands(ws) }))
      },
    }),
    route({
      method: 'POST',
      path: '/workspace/:id/commands',
      operationId: 'upsertCommand',
      summary: 'Add or replace a command',
      tags: ['commands'],
      description:
        'Writes frontmatter (`description`, `agent`, `model`, `subtask`; a null model is omitted) and the template. A leading `/` in the name is stripped. Approval-gated.',
      auth: rules.collaborator,
      params: WorkspaceParams,
      body: v.object({
        name: v.string(),
        template: v.string(),
        description: v.optional(v.pipe(v.string(), v.maxLength(1024))),
        agent: v.optional(v.string()),
        model: v.optional(v.nullable(v.string())),
        subtask: v.optional(v.boolean()),
      }),
      responses: { 200: v.object({ items: CommandItems }) },
      errors: WRITE_ERRORS,
      handler: async ({ request, params, body, principal }) => {
        s.gate.ensureWritable()
        const ws = s.workspaces.get(params.id)
        const command = await prepareCommand(body)
        const exists = (await loadCommands(ws.entry.path)).some((c) => c.name === command.name)
        await s.gate.run({
          workspace: ws,
          principal,
          signal: request.signal,
          action: 'commands.upsert',
          summary: `${exists ? 'Updated' : 'Added'} command ${command.name}`,
          target: command.name,
          paths: [command.rel],
          reason: 'commands',
          trigger: { type: 'command', name: command.name, action: exists ? 'updated' : 'added', path: command.rel },
          apply: () => writeCommand(ws.entry.path, command),
          changes: async () => [{ path: command.rel, after: command.text }],
          unchanged: () => fileHolds(ws.entry.path, command.rel, command.text),
        })
        return { items: await cachedCommands(ws) }
      },
    }),
    route({
      method: 'DELETE',
      path: '/workspace/:id/commands/:name',
      operationId: 'deleteCommand',
      summary: 'Remove a command',
      tags: ['commands'],
      auth: rules.collaborator,
      params: NamedParams,
      responses: { 200: v.object({ ok: v.literal(true) }) },
      errors: [400, ...WRITE_ERRORS],
      handler: async ({ request, params, principal }) => {
        s.gate.ensureWritable()
        const ws = s.workspaces.get(params.id)
        const name = sanitizeCommandName(params.name)
        if (!(await loadCommands(ws.entry.path)).some((c) => c.name === name))
          throw workspaceError('command_not_found', `Command ${name} not found`)
        const rel = commandFile(name)
        await s.gate.run({
          workspace: ws,
          principal,
          signal: request.signal,
          action: 'commands.delete',
          summary: `Removed command ${name}`,
          target: name,
          paths: [rel],
          reason: 'commands',
          trigger: { type: 'command', name, action: 'removed', path: rel },
          apply: () => deleteCommand(ws.entry.path, name),
          changes: async () => [{ path: rel, after: null }],
        })
        return { ok: true as const }
      },
    }),
  ]
}
