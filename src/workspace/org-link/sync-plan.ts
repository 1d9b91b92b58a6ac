/**
 * One change set: what the workspace must write to hold the delivered set, computed from the set,
 * the manifest of managed files and what is on disk, writing nothing. The person's own content is
 * never overwritten:
 * - a managed file whose disk content no longer matches the manifest (edited or deleted locally)
 *   is a conflict and stays as it is;
 * - a file the organization delivers where an unmanaged one exists with other content, a skill
 *   folder that exists locally and holds no managed file, or an MCP entry of the same name, is a
 *   conflict too;
 * - content equal to what is delivered is adopted into the manifest without a write;
 * - what the organization no longer delivers is removed only when unchanged on disk; an edited
 *   file is released (kept, no longer managed).
 * The host resolves a conflict by keeping it (`keptLocal`: not raised again until the
 * organization's content changes) or by taking the organization's (`force`: written as delivered;
 * for a skill folder, local files that are not part of the skill are removed).
 * @module
 */
import { createSha256, sha256Hex } from '../../core/sha256.ts'
import { executableFromMode, modeFor, SKILL_FILE } from '../../opencode/skill-bundle.ts'
import { readOpencodeConfig, editedOpencodeConfig } from '../config/opencode-config-file.ts'
import { readSkillFolder } from '../extensions/skill-folder.ts'
import { openForRead, resolveExisting } from '../base/workspace-path.ts'
import type { PlannedChange } from '../portability/import-plan.ts'
import type { DeliveredFile, DeliveredItem, DeliveredSet } from './delivered-set.ts'
import type { ManifestEntry, OrgConflict, OrgLinkRecord } from './org-link-state.ts'

/** What is at a path on disk. */
type DiskState = { kind: 'missing' } | { kind: 'file'; sha256: string; executable: boolean } | { kind: 'other' }

/** A computed change set. */
export interface SyncPlan {
  /** Writes for `applyImport` (files, whole skill-folder removals, the project config). */
  changes: PlannedChange[]
  manifest: Record<string, ManifestEntry>
  conflicts: OrgConflict[]
  keptLocal: Record<string, string>
  counts: { create: number; update: number; delete: number; adopted: number }
  /** Digest of each item this plan covered (what the next incremental plan compares). */
  itemDigests: Record<string, string>
}

async function diskState(root: string, rel: string): Promise<DiskState> {
  const opened = await openForRead(root, rel).catch(() => 'other' as const)
  if (opened === 'other') return { kind: 'other' }
  if (!opened) return { kind: 'missing' }
  try {
    const st = await opened.handle.stat()
    if (!st.isFile()) return { kind: 'other' }
    const hash = createSha256()
    hash.update(new Uint8Array(await opened.handle.readFile()))
    return { kind: 'file', sha256: hash.hex(), executable: executableFromMode(st.mode) }
  } finally {
    await opened.handle.close()
  }
}

/** A skill folder's files on disk (SKILL.md included): workspace-relative path → sha256. */
async function folderFiles(root: string, item: DeliveredItem): Promise<Map<string, string> | null> {
  if ((await resolveExisting(root, item.folder!).catch(() => 'outside')) === null) return null
  const files = new Map<string, string>()
  const skillMd = await diskState(root, `${item.folder}/${SKILL_FILE}`)
  if (skillMd.kind === 'file') files.set(`${item.folder}/${SKILL_FILE}`, skillMd.sha256)
  for (const f of await readSkillFolder(root, item.name).catch(() => []))
    files.set(`${item.folder}/${f.path}`, sha256Hex(f.bytes))
  return files
}

/** One digest over a folder's files, for showing a local skill's side of a conflict. */
function folderDigest(files: Map<string, string>): string {
  const hash = createSha256()
  for (const [rel, sha] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) hash.update(`${rel}\0${sha}\n`)
  return hash.hex()
}

/** sha256 of an MCP entry as JSON with sorted keys (key order in the file is not a change). */
export function mcpDigest(entry: unknown): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : typeof value === 'object' && value !== null
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
          )
        : value
  return sha256Hex(JSON.stringify(canonical(entry)))
}

const entryOf = (item: DeliveredItem, sha256: string, executable?: boolean): ManifestEntry => ({
  sha256,
  objectId: item.objectId,
  versionId: item.versionId,
  type: item.type,
  name: item.name,
  ...(executable === undefined ? {} : { executable }),
})

/** Computes the change set; `force` holds conflict paths the host resolved to the organization's. */
export async function planSync(
  root: string,
  set: DeliveredSet,
  record: Pick<OrgLinkRecord, 'manifest' | 'keptLocal' | 'conflicts' | 'itemDigests'>,
  options: {
    force?: ReadonlySet<string>
    now: number
    /**
     * Plan only the items whose digest moved since the last plan (a feed event); the others keep
     * their manifest entries and conflicts unread. A full plan (start, gap, host's sync) reads all.
     */
    incremental?: boolean
  },
): Promise<SyncPlan> {
  const force = options.force ?? new Set<string>()
  const previousDigests = record.itemDigests ?? {}
  const unchanged = new Set(
    options.incremental ? set.items.filter((i) => previousDigests[i.objectId] === i.digest).map((i) => i.objectId) : [],
  )
  // Skill folders holding managed files or files the host kept as theirs: compared file by file.
  const ownedFolders = new Set<string>()
  for (const key of [...Object.keys(record.manifest), ...Object.keys(record.keptLocal)]) {
    const parts = key.split('/')
    if (parts.length > 3 && key.startsWith('.opencode/skills/')) ownedFolders.add(parts.slice(0, 3).join('/'))
  }
  const before = new Map(record.conflicts.map((c) => [c.path, c.detectedAt]))
  const manifest: Record<string, ManifestEntry> = {}
  const keptLocal: Record<string, string> = {}
  const conflicts: OrgConflict[] = []
  const changes: PlannedChange[] = []
  const counts = { create: 0, update: 0, delete: 0, adopted: 0 }
  const conflict = (
    c: Omit<OrgConflict, 'detectedAt' | 'objectId' | 'type' | 'name' | 'versionId'>,
    item: DeliveredItem,
  ) =>
    conflicts.push({
      ...c,
      objectId: item.objectId,
      type: item.type,
      name: item.name,
      versionId: item.versionId,
      detectedAt: before.get(c.path) ?? options.now,
    })
  // Kept local: still kept while the organization offers the same content; a new version asks again.
  // The choice is remembered until the host takes the organization's content, so the path stays the
  // person's (a file conflict, not a foreign skill folder) when a new version asks again.
  const kept = (path: string, orgSha: string): boolean => {
    const previous = record.keptLocal[path]
    if (previous === undefined || force.has(path)) return false
    keptLocal[path] = previous
    return previous === orgSha
  }
  const write = (file: DeliveredFile, action: 'create' | 'update') => {
    changes.push({
      kind: 'file',
      action,
      label: file.rel,
      path: file.rel,
      before: null,
      after: file.bytes,
      mode: modeFor(file.executable),
    })
    counts[action]++
  }

  const planFile = async (item: DeliveredItem, file: DeliveredFile, forced: boolean) => {
    const managed = record.manifest[file.rel]
    if (!forced && kept(file.rel, file.sha256)) return
    const disk = await diskState(root, file.rel)
    const entry = entryOf(item, file.sha256, file.executable)
    const same = disk.kind === 'file' && disk.sha256 === file.sha256
    if (forced || (disk.kind === 'missing' && !managed)) {
      if (same && disk.kind === 'file' && disk.executable === file.executable) counts.adopted++
      else write(file, disk.kind === 'missing' ? 'create' : 'update')
      manifest[file.rel] = entry
      return
    }
    if (same) {
      // Equal content: adopt; only the executable bit may still need setting.
      if (disk.executable !== file.executable && (!managed || managed.executable === disk.executable))
        write(file, 'update')
      else if (!managed) counts.adopted++
      manifest[file.rel] = entry
      return
    }
    if (managed && disk.kind === 'file' && disk.sha256 === managed.sha256) {
      write(file, 'update')
      manifest[file.rel] = entry
      return
    }
    conflict(
      {
        path: file.rel,
        kind: 'file',
        reason: managed ? (disk.kind === 'missing' ? 'deleted_locally' : 'edited_locally') : 'local_file',
        localSha256: disk.kind === 'file' ? disk.sha256 : null,
        organizationSha256: file.sha256,
      },
      item,
    )
    // Still ours to follow: once the person restores it, the next sync updates it again.
    if (managed) manifest[file.rel] = managed
  }

  const delivered = new Set<string>()
  const carried = new Set<string>()
  for (const item of set.items) {
    for (const file of item.files) delivered.add(file.rel)
    if (unchanged.has(item.objectId)) {
      carried.add(item.objectId)
      for (const name of Object.keys(item.mcp)) delivered.add(`mcp/${name}`)
      for (const path of item.instructions) delivered.add(`instructions/${path}`)
      continue
    }
    if (item.contentSkipped) throw new Error(`item ${item.objectId} is planned but its content was not read`)
    if (item.folder) {
      const folderForced = force.has(item.folder)
      if (!folderForced && kept(item.folder, item.digest)) continue
      // A folder with managed files (or files the host kept as theirs) is ours: files are compared one by one.
      const managedHere = ownedFolders.has(item.folder)
      const local = managedHere ? null : await folderFiles(root, item)
      if (local && !folderForced) {
        const identical = local.size === item.files.length && item.files.every((f) => local.get(f.rel) === f.sha256)
        if (!identical) {
          conflict(
            {
              path: item.folder,
              kind: 'skill',
              reason: 'local_skill',
              localSha256: folderDigest(local),
              organizationSha256: item.digest,
            },
            item,
          )
          continue
        }
      }
      if (folderForced && local) {
        // Taking the organization's skill over a local one: its other files go, so the folder is the skill.
        for (const rel of local.keys()) {
          if (item.files.some((f) => f.rel === rel)) continue
          changes.push({ kind: 'file', action: 'delete', label: rel, path: rel, before: null, after: null })
          counts.delete++
        }
      }
      for (const file of item.files) await planFile(item, file, folderForced || force.has(file.rel))
      continue
    }
    for (const file of item.files) await planFile(item, file, force.has(file.rel))
  }

  // Unchanged items keep what the last plan decided for them.
  for (const [path, entry] of Object.entries(record.manifest)) if (carried.has(entry.objectId)) manifest[path] = entry
  for (const c of record.conflicts) if (carried.has(c.objectId)) conflicts.push(c)
  for (const [path, sha] of Object.entries(record.keptLocal))
    if (delivered.has(path) || set.items.some((i) => carried.has(i.objectId) && i.folder === path))
      keptLocal[path] ??= sha

  // MCP entries and instructions in the project config. Entries of refused items stay as they are.
  const refused = new Set(set.rejected.map((r) => r.objectId))
  const wantedMcp = set.items
    .filter((item) => !carried.has(item.objectId))
    .flatMap((item) => Object.entries(item.mcp).map(([name, entry]) => ({ item, name, entry })))
  const managedMcp = Object.keys(record.manifest).filter((k) => k.startsWith('mcp/') && !manifest[k])
  const wantedInstructions = set.items
    .filter((item) => !carried.has(item.objectId))
    .flatMap((item) => item.instructions.map((path) => ({ item, path })))
  const managedInstructions = Object.keys(record.manifest).filter((k) => k.startsWith('instructions/') && !manifest[k])
  const edits: Array<{ path: string[]; value: unknown }> = []
  if (wantedMcp.length || managedMcp.length || wantedInstructions.length || managedInstructions.length) {
    const config = await readOpencodeConfig(root)
    const localMap = (config.data.mcp ?? {}) as Record<string, unknown>
    for (const { item, name, entry } of wantedMcp) {
      const key = `mcp/${name}`
      delivered.add(key)
      const orgSha = mcpDigest(entry)
      if (kept(key, orgSha)) continue
      const managed = record.manifest[key]
      const localSha = Object.hasOwn(localMap, name) ? mcpDigest(localMap[name]) : null
      const set = () => {
        edits.push({ path: ['mcp', name], value: entry })
        counts[localSha === null ? 'create' : 'update']++
        manifest[key] = entryOf(item, orgSha)
      }
      if (localSha === orgSha) {
        if (!managed) counts.adopted++
        manifest[key] = entryOf(item, orgSha)
      } else if (force.has(key) || (localSha === null && !managed) || (managed && localSha === managed.sha256)) set()
      else {
        conflict(
          {
            path: key,
            kind: 'mcp',
            reason: managed ? (localSha === null ? 'deleted_locally' : 'edited_locally') : 'local_mcp',
            localSha256: localSha,
            organizationSha256: orgSha,
          },
          item,
        )
        if (managed) manifest[key] = managed
      }
    }
    for (const key of managedMcp) {
      if (delivered.has(key)) continue
      if (refused.has(record.manifest[key]!.objectId)) {
        manifest[key] = record.manifest[key]!
        continue
      }
      const name = key.slice(4)
      const localSha = Object.hasOwn(localMap, name) ? mcpDigest(localMap[name]) : null
      if (localSha === record.manifest[key]!.sha256) {
        edits.push({ path: ['mcp', name], value: undefined })
        counts.delete++
      }
    }
    // Instructions: the context files are added to the project's list, and taken out once no longer delivered.
    const list = Array.isArray(config.data.instructions) ? [...(config.data.instructions as unknown[])] : []
    let listChanged = false
    for (const { item, path } of wantedInstructions) {
      const key = `instructions/${path}`
      delivered.add(key)
      manifest[key] = entryOf(item, sha256Hex(path))
      if (!list.includes(path)) {
        list.push(path)
        listChanged = true
      }
    }
    for (const key of managedInstructions) {
      if (delivered.has(key)) continue
      if (refused.has(record.manifest[key]!.objectId)) {
        manifest[key] = record.manifest[key]!
        continue
      }
      const at = list.indexOf(key.slice('instructions/'.length))
      if (at >= 0) {
        list.splice(at, 1)
        listChanged = true
      }
    }
    if (listChanged) edits.push({ path: ['instructions'], value: list.length ? list : undefined })
    if (edits.length) {
      const next = await editedOpencodeConfig(root, edits)
      changes.push({
        kind: 'opencode',
        action: config.exists ? 'update' : 'create',
        label: next.rel,
        path: next.rel,
        before: config.exists ? config.text : null,
        after: next.text,
      })
    }
  }

  // Items the organization no longer delivers (refused items keep their files: a broken answer removes nothing).
  const gone = Object.entries(record.manifest).filter(
    ([path]) => !/^(mcp|instructions|provider)\//.test(path) && !delivered.has(path) && !manifest[path],
  )
  const byFolder = new Map<string, Array<[string, ManifestEntry]>>()
  for (const [path, entry] of gone) {
    if (refused.has(entry.objectId)) {
      manifest[path] = entry
      continue
    }
    const folder = entry.type === 'skill' ? `.opencode/skills/${entry.name}` : ''
    const list = byFolder.get(folder) ?? []
    list.push([path, entry])
    byFolder.set(folder, list)
  }
  for (const [folder, entries] of byFolder) {
    const unchanged: string[] = []
    for (const [path, entry] of entries) {
      const disk = await diskState(root, path)
      if (disk.kind === 'file' && disk.sha256 === entry.sha256) unchanged.push(path)
    }
    const stillDelivered = set.items.some((i) => i.folder === folder)
    if (folder && !stillDelivered && unchanged.length === entries.length) {
      const local = await folderFiles(root, { folder, name: folder.slice('.opencode/skills/'.length) } as DeliveredItem)
      if (local && [...local.keys()].every((rel) => unchanged.includes(rel))) {
        changes.push({
          kind: 'skill',
          action: 'delete',
          label: folder,
          path: `${folder}/${SKILL_FILE}`,
          before: null,
          after: null,
        })
        counts.delete += unchanged.length
        continue
      }
    }
    for (const path of unchanged) {
      changes.push({ kind: 'file', action: 'delete', label: path, path, before: null, after: null })
      counts.delete++
    }
  }
  const itemDigests: Record<string, string> = {}
  for (const item of set.items) itemDigests[item.objectId] = item.digest
  return { changes, manifest, conflicts, keptLocal, counts, itemDigests }
}
