/**
 * The MCP tools: search what the caller may see, read one object, list the caller's
 * organizations, and (with write access) create a skill or publish a version. Each calls the same
 * domain function as the HTTP route that does the same thing, with the same actor, so grants,
 * roles and audit apply identically; the actor carries origin `mcp` into the audit log.
 * @module
 */
import { toJsonSchema } from '@valibot/to-json-schema'
import * as v from 'valibot'
import { ApiError } from '../../core/errors.ts'
import { listMyOrganizations } from '../admin/organizations.ts'
import { listConfigObjects, getConfigObject, type ConfigObjectView } from '../catalog/config-objects.ts'
import { addVersion, getResolved } from '../catalog/config-versions.ts'
import { OBJECT_TYPES } from '../catalog/config-source.ts'
import { getContainer, listContainers } from '../catalog/containers.ts'
import { listPluginObjects } from '../catalog/memberships.ts'
import { getHub, listHubs, listHubSkills } from '../catalog/skill-hubs.ts'
import { createSkill } from '../catalog/skills.ts'
import type { Deps } from '../deps.ts'
import type { Permission } from '../policy.ts'
import type { McpCaller } from './mcp-caller.ts'

/** What a tool answers: JSON shown to the model as text, and the same object as structured content. */
export interface ToolResult {
  content: Array<{ type: 'text'; text: string }>
  structuredContent?: Record<string, unknown>
  isError?: boolean
}

interface ToolSpec<S extends v.GenericSchema> {
  name: string
  title: string
  description: string
  input: S
  /** Permissions the caller needs (all of them) for the tool to be listed and callable. */
  needs: Permission[]
  /** True for tools that change something. */
  writes: boolean
  run(deps: Deps, caller: McpCaller, args: v.InferOutput<S>): Promise<Record<string, unknown>>
}

const SEARCH_TYPES = [...OBJECT_TYPES, 'skill_hub', 'plugin'] as const
/** Hubs and plugins are filtered by text in memory; at most this many of each are looked at. */
const CONTAINER_SCAN = 500

const FileIn = v.strictObject({
  path: v.pipe(v.string(), v.minLength(1), v.maxLength(512), v.description('Path inside the skill folder')),
  content: v.optional(v.pipe(v.string(), v.description('UTF-8 text of the file'))),
  contentBase64: v.optional(v.pipe(v.string(), v.description('The bytes in base64, for binary files'))),
  executable: v.optional(v.boolean()),
})

function tool<S extends v.GenericSchema>(spec: ToolSpec<S>): ToolSpec<S> {
  return spec
}

const matches = (text: string, item: { name: string; description: string | null }) =>
  `${item.name}\n${item.description ?? ''}`.toLowerCase().includes(text.toLowerCase())

function objectSummary(o: ConfigObjectView) {
  return {
    kind: 'config_object',
    id: o.id,
    type: o.type,
    name: o.name,
    title: o.title,
    description: o.description,
    status: o.status,
    latestVersionId: o.latestVersion?.id ?? null,
    latestVersionNumber: o.latestVersion?.number ?? null,
  }
}

/** Pages through a visible list until `limit` items match (never more than {@link CONTAINER_SCAN} looked at). */
async function scan<T extends { name: string; description: string | null }>(
  page: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor: string | null }>,
  text: string | undefined,
  limit: number,
): Promise<T[]> {
  const out: T[] = []
  let cursor: string | undefined
  let seen = 0
  do {
    const got = await page(cursor)
    for (const item of got.items) if (!text || matches(text, item)) out.push(item)
    seen += got.items.length
    cursor = got.nextCursor ?? undefined
  } while (cursor && out.length < limit && seen < CONTAINER_SCAN)
  return out.slice(0, limit)
}

const TOOLS = [
  tool({
    name: 'search',
    title: 'Search the organization',
    description:
      'Find config objects (skills, agents, commands, tools, MCP entries, hooks, context), skill hubs and plugins you can see in the organization, by words in their name, title, description or content, and/or by type. Returns ids to pass to get_object.',
    input: v.strictObject({
      query: v.optional(
        v.pipe(v.string(), v.maxLength(200), v.description('Words to look for; every word must match (prefix)')),
      ),
      type: v.optional(v.pipe(v.picklist(SEARCH_TYPES), v.description('Only this kind of thing'))),
      limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(50), v.description('Default 20'))),
    }),
    needs: ['config_objects.read'],
    writes: false,
    async run(deps, caller, args) {
      const limit = args.limit ?? 20
      const text = args.query?.trim() || undefined
      const items: Array<Record<string, unknown>> = []
      const objectType = args.type && (OBJECT_TYPES as readonly string[]).includes(args.type) ? args.type : undefined
      if (!args.type || objectType) {
        const page = await listConfigObjects(deps, caller.actor, {
          limit,
          q: text,
          type: objectType as (typeof OBJECT_TYPES)[number] | undefined,
        })
        items.push(...page.items.map(objectSummary))
      }
      if ((!args.type || args.type === 'skill_hub') && caller.allows('skill_hubs.read')) {
        const hubs = await scan((cursor) => listHubs(deps, caller.actor, { cursor, limit: 100 }), text, limit)
        items.push(
          ...hubs.map((h) => ({
            kind: 'skill_hub',
            id: h.id,
            name: h.name,
            description: h.description,
            skillCount: h.skillCount,
          })),
        )
      }
      if ((!args.type || args.type === 'plugin') && caller.allows('plugins.read')) {
        const plugins = await scan(
          (cursor) => listContainers(deps, caller.actor, 'plugin', { cursor, limit: 100 }),
          text,
          limit,
        )
        items.push(
          ...plugins.map((p) => ({
            kind: 'plugin',
            id: p.id,
            name: p.name,
            description: p.description,
            status: p.status,
            objectCount: p.memberCount,
          })),
        )
      }
      return { items: items.slice(0, limit) }
    },
  }),
  tool({
    name: 'get_object',
    title: 'Read one object',
    description:
      'Read one config object (id cob_…) with its latest version resolved into the files a runtime installs, a skill hub (shub_…) with its skills, or a plugin (plg_…) with the objects in it. Archived and deleted objects come without a resolved form.',
    input: v.strictObject({
      id: v.pipe(v.string(), v.regex(/^(cob|shub|plg)_[0-9a-z]{26}$/, 'must be a cob_, shub_ or plg_ id')),
    }),
    needs: ['config_objects.read'],
    writes: false,
    async run(deps, caller, { id }) {
      if (id.startsWith('cob_')) {
        const object = await getConfigObject(deps, caller.actor, id)
        const resolved = object.status === 'active' ? await getResolved(deps, caller.actor, id) : null
        return { kind: 'config_object', object, resolved }
      }
      if (id.startsWith('shub_')) {
        caller.require('skill_hubs.read')
        const hub = await getHub(deps, caller.actor, id)
        const skills = await listHubSkills(deps, caller.actor, id, { limit: 200 })
        return { kind: 'skill_hub', hub, skills: skills.items }
      }
      caller.require('plugins.read')
      const plugin = await getContainer(deps, caller.actor, 'plugin', id)
      const objects = await listPluginObjects(deps, caller.actor, id, { limit: 200 })
      return { kind: 'plugin', plugin, objects: objects.items.map((m) => objectSummary(m.configObject)) }
    },
  }),
  tool({
    name: 'list_organizations',
    title: 'List my organizations',
    description:
      'The organizations you belong to, with your role in each; `current` is the one this connection acts in. An API key or an OAuth token is bound to one organization and sees only that one.',
    input: v.strictObject({}),
    needs: [],
    writes: false,
    async run(deps, caller) {
      const principal = caller.principal
      const page = await listMyOrganizations(deps, principal.user!.id, principal.org?.id ?? null, {
        limit: 100,
        onlyOrgId: principal.credential === 'session' ? undefined : principal.org!.id,
      })
      return {
        current: principal.org ? { id: principal.org.id, name: principal.org.name, role: principal.org.role } : null,
        items: page.items.map((o) => ({ id: o.id, name: o.name, role: o.role, current: o.id === principal.org?.id })),
      }
    },
  }),
  tool({
    name: 'create_skill',
    title: 'Create a skill',
    description:
      'Create a skill from its SKILL.md (YAML frontmatter with name and description, then the instructions) and optional files beside it. You become its manager. Needs write access.',
    input: v.strictObject({
      skillMd: v.pipe(v.string(), v.minLength(1), v.description('The full SKILL.md text')),
      title: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(200))),
      files: v.optional(v.pipe(v.array(FileIn), v.maxLength(200))),
    }),
    needs: ['config_objects.write'],
    writes: true,
    async run(deps, caller, args) {
      const skill = await createSkill(deps, caller.actor, args)
      return { skill }
    },
  }),
  tool({
    name: 'publish_version',
    title: 'Publish a new version',
    description:
      'Append a version to a config object you may edit. `baseVersionId` must be its latest version (from get_object); if someone published since, the call fails with version_conflict and the latest id, so re-read and merge. For a skill, `rawSourceText` is the SKILL.md and `files` the files beside it; an unchanged skill adds no version. Needs write access.',
    input: v.strictObject({
      objectId: v.pipe(v.string(), v.regex(/^cob_[0-9a-z]{26}$/, 'must be a cob_ id')),
      baseVersionId: v.pipe(v.string(), v.regex(/^cov_[0-9a-z]{26}$/, 'must be a cov_ id')),
      rawSourceText: v.pipe(
        v.string(),
        v.minLength(1),
        v.description('The source: SKILL.md, agent or command markdown, or JSON'),
      ),
      files: v.optional(v.pipe(v.array(FileIn), v.maxLength(200))),
      reason: v.optional(v.pipe(v.string(), v.maxLength(500))),
    }),
    needs: ['config_objects.write'],
    writes: true,
    async run(deps, caller, args) {
      const version = await addVersion(deps, caller.actor, args.objectId, {
        input: { rawSourceText: args.rawSourceText, files: args.files },
        baseVersionId: args.baseVersionId,
        reason: args.reason,
      })
      return {
        version: {
          id: version.id,
          configObjectId: version.configObjectId,
          number: version.number,
          createdAt: version.createdAt,
        },
      }
    },
  }),
]

type AnyTool = ToolSpec<v.GenericSchema>

/** Input JSON schemas, made once (valibot schemas without transforms convert cleanly). */
const inputSchemas = new Map<string, Record<string, unknown>>(
  TOOLS.map((t) => {
    const schema = toJsonSchema(t.input, { errorMode: 'ignore' }) as Record<string, unknown>
    delete schema.$schema
    return [t.name, schema]
  }),
)

function usable(t: AnyTool, caller: McpCaller): boolean {
  return t.needs.every((p) => caller.allows(p)) && (!t.writes || caller.canWrite)
}

/** The tools this caller may use, as `tools/list` shows them. */
export function listTools(caller: McpCaller) {
  return (TOOLS as AnyTool[])
    .filter((t) => usable(t, caller))
    .map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: inputSchemas.get(t.name)!,
      annotations: { readOnlyHint: !t.writes, destructiveHint: false, openWorldHint: false },
    }))
}

const errorResult = (code: string, message: string, details?: unknown): ToolResult => ({
  content: [{ type: 'text', text: JSON.stringify({ error: { code, message, ...(details ? { details } : {}) } }) }],
  isError: true,
})

/**
 * Runs a tool. A refusal or a domain error (404, 409 `version_conflict`, 422…) is a tool result
 * with `isError`, carrying the same code as the HTTP API, so the model can read and react to it;
 * an unknown tool or a tool the caller may not use is null (a protocol error for the caller).
 */
export async function callTool(deps: Deps, caller: McpCaller, name: string, args: unknown): Promise<ToolResult | null> {
  const found = (TOOLS as AnyTool[]).find((t) => t.name === name)
  if (!found || !usable(found, caller)) return null
  const parsed = v.safeParse(found.input, args ?? {})
  if (!parsed.success) {
    return errorResult(
      'validation_failed',
      'Invalid arguments',
      parsed.issues.map((i) => ({ path: v.getDotPath(i) ?? '', message: i.message })),
    )
  }
  try {
    const out = await found.run(deps, caller, parsed.output)
    return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out }
  } catch (error) {
    if (error instanceof ApiError) return errorResult(error.code, error.message, error.details)
    throw error
  }
}
