/**
 * Skill routes: list, read one (with its file list), read one file, add or replace (POST, the
 * whole folder when `files` is given), remove (DELETE, the whole folder); writes are
 * approval-gated, one approval per write listing every file it changes.
 * @module
 */
import * as v from 'valibot'
import { routeFactory } from '../../core/route.ts'
import { bundleHash, encodeWireFile, listingOf, normalizeSkillPath, SKILL_FILE } from '../../opencode/skill-bundle.ts'
import { SkillFileListing, SkillFileOut, SkillFilesIn } from '../../opencode/skill-wire.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import { diffSkillFolder, readSkillFolder, skillDir } from '../extensions/skill-folder.ts'
import {
  deleteSkill,
  loadSkills,
  prepareSkill,
  skillLimitsOf,
  validateSkillName,
  writeSkill,
} from '../extensions/skills.ts'
import { skillFile } from '../config/workspace-layout.ts'
import type { WorkspaceRuntime } from '../events/workspace-runtime.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { fileHolds } from '../approvals/write-gate.ts'
import { NamedParams, WorkspaceParams, WRITE_ERRORS } from './schemas.ts'
import { workspaceError } from '../workspace-errors.ts'

const route = routeFactory<WorkspaceRule, Principal>()

const SkillFileParams = v.object({
  id: v.pipe(v.string(), v.minLength(1), v.maxLength(128)),
  name: v.pipe(v.string(), v.maxLength(512)),
  path: v.pipe(v.string(), v.minLength(1), v.maxLength(1024)),
})

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
      description:
        '`content` is SKILL.md; `files` lists every other file of the folder (path, bytes, executable, sha256), sorted by path. Read one with `GET …/skills/:name/files/:path`.',
      auth: rules.viewer,
      params: NamedParams,
      responses: {
        200: v.object({ item: SkillItemSchema, content: v.string(), files: v.array(SkillFileListing) }),
      },
      errors: [400],
      handler: async ({ params }) => {
        const ws = s.workspaces.get(params.id)
        const name = validateSkillName(params.name)
        const found = (await cachedSkills(ws)).find((x) => x.item.name === name)
        if (!found) throw workspaceError('skill_not_found', `Skill ${name} not found`)
        return { ...found, files: (await readSkillFolder(ws.entry.path, name)).map(listingOf) }
      },
    }),
    route({
      method: 'GET',
      path: '/workspace/:id/skills/:name/files/:path+',
      operationId: 'getSkillFile',
      summary: "Read one file of a skill's folder",
      tags: ['skills'],
      description:
        'UTF-8 text comes as `content`, other bytes as `contentBase64`; `executable: true` when the file is executable. 404 `skill_file_not_found` when the skill has no such file.',
      auth: rules.viewer,
      params: SkillFileParams,
      responses: { 200: SkillFileOut },
      errors: [400, 422],
      handler: async ({ params }) => {
        const ws = s.workspaces.get(params.id)
        const name = validateSkillName(params.name)
        if (!(await cachedSkills(ws)).some((x) => x.item.name === name))
          throw workspaceError('skill_not_found', `Skill ${name} not found`)
        const path = normalizeSkillPath(params.path)
        const file = (await readSkillFolder(ws.entry.path, name)).find((f) => f.path === path)
        if (!file) throw workspaceError('skill_file_not_found', `Skill ${name} has no file ${path}`)
        return encodeWireFile(file)
      },
    }),
    route({
      method: 'POST',
      path: '/workspace/:id/skills',
      operationId: 'upsertSkill',
      summary: 'Add or replace a skill',
      tags: ['skills'],
      description:
        'Writes `.opencode/skills/<name>/SKILL.md`. Frontmatter `name`, if present, must equal `name`; the description (frontmatter, else payload) must be 1-1024 characters. With `files` (`{path, contentBase64 | content, executable?, sha256?}`) the whole folder is replaced atomically by SKILL.md plus exactly those files; without it only SKILL.md is written. Limits (server config `skills`): files per skill (422 `skill_too_many_files`), bytes per file (413 `skill_file_too_large`), bytes per skill (413 `skill_too_large`), each naming the limit and path; bad paths 422 `invalid_skill_file_path`. One approval (`skills.upsert`) lists every file the write changes; an unchanged folder is not written.',
      auth: rules.collaborator,
      params: WorkspaceParams,
      body: v.object({
        name: v.string(),
        content: v.string(),
        description: v.optional(v.string()),
        files: v.optional(SkillFilesIn),
      }),
      responses: {
        200: v.object({ name: v.string(), path: v.string(), description: v.string(), scope: v.literal('project') }),
      },
      errors: WRITE_ERRORS,
      handler: async ({ request, params, body, principal }) => {
        s.gate.ensureWritable()
        const ws = s.workspaces.get(params.id)
        const skill = await prepareSkill(body, skillLimitsOf(s.config.file))
        const current = (await loadSkills(ws.entry.path)).find((x) => x.item.name === skill.name)
        const exists = current !== undefined
        const before = await readSkillFolder(ws.entry.path, skill.name)
        const changes = diffSkillFolder(
          { text: current?.content ?? null, files: before },
          { text: skill.text, files: skill.files ?? before },
        )
        const listed = changes.map((c) => `${c.action} ${c.path}`)
        await s.gate.run({
          workspace: ws,
          principal,
          signal: request.signal,
          action: 'skills.upsert',
          summary: `${exists ? 'Updated' : 'Added'} skill ${skill.name}: ${listed.slice(0, 50).join(', ')}${listed.length > 50 ? `, and ${listed.length - 50} more` : ''}`,
          target: skill.name,
          // Every file the write changes: the approver sees them all, and a change to any of them
          // while the write waits is a conflict.
          paths: changes.length ? changes.map((c) => `${skillDir(skill.name)}/${c.path}`) : [skill.rel],
          reason: 'skills',
          trigger: { type: 'skill', name: skill.name, action: exists ? 'updated' : 'added', path: skill.rel },
          apply: () => writeSkill(ws.entry.path, skill),
          changes: async () => {
            const files = new Map((skill.files ?? []).map((f) => [f.path, f]))
            return changes.map((c) => {
              const file = files.get(c.path)
              return {
                path: `${skillDir(skill.name)}/${c.path}`,
                after: c.action === 'delete' ? null : c.path === SKILL_FILE ? skill.text : (file?.bytes ?? null),
                ...(file ? { executable: file.executable } : {}),
              }
            })
          },
          unchanged: async () =>
            (await fileHolds(ws.entry.path, skill.rel, skill.text)) &&
            (skill.files === null ||
              bundleHash(SKILL_FILE, skill.files) ===
                bundleHash(SKILL_FILE, await readSkillFolder(ws.entry.path, skill.name))),
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
          throw workspaceError('skill_not_found', `Skill ${name} not found`)
        const files = await readSkillFolder(ws.entry.path, name)
        await s.gate.run({
          workspace: ws,
          principal,
          signal: request.signal,
          action: 'skills.delete',
          summary: `Removed skill ${name} (its folder: SKILL.md${files.length ? ` and ${files.length} more files` : ''})`,
          target: name,
          paths: [rel, ...files.map((f) => `${skillDir(name)}/${f.path}`)],
          reason: 'skills',
          trigger: { type: 'skill', name, action: 'removed', path: rel },
          apply: () => deleteSkill(ws.entry.path, name),
          changes: async () =>
            [rel, ...files.map((f) => `${skillDir(name)}/${f.path}`)].map((path) => ({ path, after: null })),
        })
        return { ok: true as const, name, path: `${ws.entry.path}/${rel}` }
      },
    }),
  ]
}
