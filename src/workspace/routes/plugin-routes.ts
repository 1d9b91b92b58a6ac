/**
 * Plugin routes: list, add (POST) and remove (DELETE by name); writes are approval-gated.
 * @module
 */
import * as v from 'valibot'
import { routeFactory } from '../../core/route.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import { configChange, opencodeConfigRel, readOpencodeConfig } from '../config/opencode-config-file.ts'
import {
  addPlugin,
  hasPlugin,
  listPlugins,
  pluginName,
  pluginRemovalPlan,
  pluginsWith,
  pluginsWithout,
  removePlugin,
  validatePluginSpec,
} from '../extensions/plugins.ts'
import { cachedOpencodeConfig } from '../config/workspace-config.ts'
import type { WorkspaceRuntime } from '../events/workspace-runtime.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { NamedParams, WorkspaceParams, WRITE_ERRORS } from './schemas.ts'

const route = routeFactory<WorkspaceRule, Principal>()

const PluginListSchema = v.object({
  items: v.array(
    v.object({
      spec: v.string(),
      source: v.picklist(['config', 'dir.project']),
      scope: v.literal('project'),
      path: v.optional(v.string()),
    }),
  ),
  loadOrder: v.array(v.string()),
})

function cachedList(ws: WorkspaceRuntime) {
  return ws.cache.get('plugins', async () =>
    listPlugins(ws.entry.path, (await cachedOpencodeConfig(ws.entry.path, ws.cache)).data),
  )
}

/** `/workspace/:id/plugins` routes. */
export function pluginRoutes(s: WorkspaceServices) {
  return [
    route({
      method: 'GET',
      path: '/workspace/:id/plugins',
      operationId: 'listPlugins',
      summary: 'List plugins',
      tags: ['plugins'],
      description: 'The config `plugin` specs plus `.opencode/plugins/*.{js,ts}`, de-duplicated by package name.',
      auth: rules.viewer,
      params: WorkspaceParams,
      responses: { 200: PluginListSchema },
      errors: [422],
      handler: ({ params }) => {
        const ws = s.workspaces.get(params.id)
        return ws.cache.jsonBody('plugins', () => cachedList(ws))
      },
    }),
    route({
      method: 'POST',
      path: '/workspace/:id/plugins',
      operationId: 'addPlugin',
      summary: 'Add a plugin spec',
      tags: ['plugins'],
      description:
        'Appends to the config `plugin` array; a spec whose package name is already there is a no-op. Approval-gated.',
      auth: rules.collaborator,
      params: WorkspaceParams,
      body: v.object({ spec: v.string() }),
      responses: { 200: PluginListSchema },
      errors: WRITE_ERRORS,
      handler: async ({ request, params, body, principal }) => {
        s.gate.ensureWritable()
        const ws = s.workspaces.get(params.id)
        const spec = validatePluginSpec(body.spec)
        if (hasPlugin((await readOpencodeConfig(ws.entry.path)).data, spec)) return cachedList(ws)
        const rel = await opencodeConfigRel(ws.entry.path)
        await s.gate.run({
          workspace: ws,
          principal,
          signal: request.signal,
          action: 'plugins.add',
          summary: `Added ${spec}`,
          target: pluginName(spec),
          paths: [rel],
          reason: 'plugins',
          trigger: { type: 'plugin', name: pluginName(spec), action: 'added' },
          apply: () => addPlugin(ws.entry.path, spec),
          changes: async () => {
            const { data } = await readOpencodeConfig(ws.entry.path)
            return configChange(ws.entry.path, [{ path: ['plugin'], value: pluginsWith(data, spec) }])
          },
        })
        return cachedList(ws)
      },
    }),
    route({
      method: 'DELETE',
      path: '/workspace/:id/plugins/:name',
      operationId: 'removePlugin',
      summary: 'Remove a plugin by name',
      tags: ['plugins'],
      description:
        'Removes config specs with that package name and a matching `.opencode/plugins/<name>.{js,ts}` file. Approval-gated.',
      auth: rules.collaborator,
      params: NamedParams,
      responses: { 200: PluginListSchema },
      errors: WRITE_ERRORS,
      handler: async ({ request, params, principal }) => {
        s.gate.ensureWritable()
        const ws = s.workspaces.get(params.id)
        const plan = await pluginRemovalPlan(ws.entry.path, (await readOpencodeConfig(ws.entry.path)).data, params.name)
        const paths = [...(plan.specs.length ? [await opencodeConfigRel(ws.entry.path)] : []), ...plan.files]
        await s.gate.run({
          workspace: ws,
          principal,
          signal: request.signal,
          action: 'plugins.remove',
          summary: `Removed ${params.name}`,
          target: params.name,
          paths,
          reason: 'plugins',
          trigger: { type: 'plugin', name: params.name, action: 'removed' },
          apply: () => removePlugin(ws.entry.path, params.name),
          changes: async () => {
            const { data } = await readOpencodeConfig(ws.entry.path)
            const remaining = pluginsWithout(data, plan.specs)
            return [
              ...(plan.specs.length ? await configChange(ws.entry.path, [{ path: ['plugin'], value: remaining }]) : []),
              ...plan.files.map((path) => ({ path, after: null })),
            ]
          },
        })
        return cachedList(ws)
      },
    }),
  ]
}
