/**
 * Skill routes: list, read one, add or replace (POST), remove (DELETE); writes are approval-gated.
 * @module
 */
import * as v from 'valibot'
import { errors } from '../../core/errors.ts'
import { routeFactory } from '../../core/route.ts'
import { rules, type Principal, type WorkspaceRule } from '../auth.ts'
import { deleteSkill, loadSkills, prepareSkill, validateSkillName, writeSkill } from '../skills.ts'
import { skillFile } from '../workspace-layout.ts'
import type { WorkspaceRuntime } from '../workspace-registry.ts'
import type { WorkspaceServices } from '../workspace-services.ts'
import { fileHolds } from '../write-gate.ts'
import { NamedParams, WorkspaceParams, WRITE_ERRORS } from './schemas.ts'

const route = routeFactory<WorkspaceRule, Principal>()

const SkillItemSchema = v.object({
  name: v.string(),
  path: v.string(),
  description: v.string(),
  scope: v.literal('project'),
  trigger: v.optional(v.string()),
})

function cachedSkills(ws: WorkspaceRuntime) {
  return ws.cache.get('skills', () => loadSkills(ws.entry.path))
}

/** `/workspace/:id/skills` routes. */
export function skillRoutes(s: WorkspaceServices) {
  return [
    route({
      method: 'GET',
      path: '/workspace/:id/skills',
      operationId: 'listSkills',
      summary: 'List skills',
      tags: ['skills'],
      description: 'Valid skills in `.opencode/skills/<name>/SKILL.md`, sorted by name.',
      auth: rules.viewer,
      params: WorkspaceParams,
      responses: { 200: v.object({ items: v.array(SkillItemSchema) }) },
      handler: ({ params }) => {
        const ws = s.workspaces.get(params.id)
        return ws.cache.jsonBody('skills', async () => ({ items: (await cachedSkills(ws)).map((x) => x.item) }))
      },
    }),
    route({
      method: 'GET',
      path: '/workspace/:id/skills/:name',
      operationId: 'getSkill',
      summary: 'Read a skill',
      tags: ['skills'],
      auth: rules.viewer,
      params: NamedParams,
      responses: { 200: v.object({ item: SkillItemSchema, content: v.string() }) },
      errors: [400],
      handler: async ({ params }) => {
        const ws = s.workspaces.get(params.id)
        const name = validateSkillName(params.name)
        const found = (await cachedSkills(ws)).find((x) => x.item.name === name)
        if (!found) throw errors.notFound('skill_not_found', `Skill ${name} not found`)
        return found
      },
    }),
    route({
      method: 'POST',
      path: '/workspace/:id/skills',
      operationId: 'upsertSkill',
      summary: 'Add or replace a skill',
      tags: ['skills'],
      description:
        'Writes `.opencode/skills/<name>/SKILL.md`. Frontmatter `name`, if present, must equal `name`; the description (frontmatter, else payload) must be 1-1024 characters. Approval-gated.',
      auth: rules.collaborator,
      params: WorkspaceParams,
      body: v.object({ name: v.string(), content: v.string(), description: v.optional(v.string()) }),
      responses: {
        200: v.object({ name: v.string(), path: v.string(), description: v.string(), scope: v.literal('project') }),
      },
      errors: WRITE_ERRORS,
      handler: async ({ request, params, body, principal }) => {
        s.gate.ensureWritable()
        const ws = s.workspaces.get(params.id)
        const skill = await prepareSkill(body)
        const exists = (await loadSkills(ws.entry.path)).some((x) => x.item.name === skill.name)
        await s.gate.run({
          workspace: ws,
          principal,
          signal: request.signal,
          action: 'skills.upsert',
          summary: `${exists ? 'Updated' : 'Added'} skill ${skill.name}`,
          target: skill.name,
          paths: [skill.rel],
          reason: 'skills',
          trigger: { type: 'skill', name: skill.name, action: exists ? 'updated' : 'added', path: skill.rel },
          apply: () => writeSkill(ws.entry.path, skill),
          unchanged: () => fileHolds(ws.entry.path, skill.rel, skill.text),
        })
        return {
          name: skill.name,
          path: `${ws.entry.path}/${skill.rel}`,
          description: skill.description,
          scope: 'project' as const,
        }
      },
    }),
    route({
      method: 'DELETE',
      path: '/workspace/:id/skills/:name',
      operationId: 'deleteSkill',
      summary: 'Remove a skill',
      tags: ['skills'],
      auth: rules.collaborator,
      params: NamedParams,
      responses: { 200: v.object({ ok: v.literal(true), name: v.string(), path: v.string() }) },
      errors: [400, ...WRITE_ERRORS],
      handler: async ({ request, params, principal }) => {
        s.gate.ensureWritable()
        const ws = s.workspaces.get(params.id)
        const name = validateSkillName(params.name)
        const rel = skillFile(name)
        if (!(await loadSkills(ws.entry.path)).some((x) => x.item.name === name))
          throw errors.notFound('skill_not_found', `Skill ${name} not found`)
        await s.gate.run({
          workspace: ws,
          principal,
          signal: request.signal,
          action: 'skills.delete',
          summary: `Removed skill ${name}`,
          target: name,
          paths: [rel],
          reason: 'skills',
          trigger: { type: 'skill', name, action: 'removed', path: rel },
          apply: () => deleteSkill(ws.entry.path, name),
        })
        return { ok: true as const, name, path: `${ws.entry.path}/${rel}` }
      },
    }),
  ]
}
