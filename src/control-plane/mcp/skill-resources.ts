/**
 * The skills delivered to the caller as MCP resources: `skill://<name>/SKILL.md` and every file of
 * the skill's folder as `skill://<name>/<path>`, plus `skills://index` (JSON: each skill with its
 * version, digest and files). The set is exactly `GET /v1/me/delivery`'s (`deliveredSet()`), so
 * MCP shows no skill the member does not receive.
 * @module
 */
import type { DeliveredFile, DeliveredItem, DeliverySet } from '../delivery/delivered-set.ts'

/** The index resource's URI. */
export const INDEX_URI = 'skills://index'

/** Entries per `resources/list` page. */
export const LIST_PAGE = 500

/** A resource as `resources/list` shows it. */
export interface ResourceEntry {
  uri: string
  name: string
  title?: string
  description?: string
  mimeType: string
  size?: number
}

/** What `resources/read` answers for one URI: text exactly as stored, or the bytes in base64. */
export type ResourceContent =
  | { uri: string; mimeType: string; text: string }
  | { uri: string; mimeType: string; blob: string }

const MIME: Record<string, string> = {
  md: 'text/markdown',
  markdown: 'text/markdown',
  txt: 'text/plain',
  json: 'application/json',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  toml: 'application/toml',
  sh: 'text/x-shellscript',
  py: 'text/x-python',
  js: 'text/javascript',
  mjs: 'text/javascript',
  ts: 'text/x-typescript',
  html: 'text/html',
  css: 'text/css',
  csv: 'text/csv',
  xml: 'application/xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  svg: 'image/svg+xml',
  pdf: 'application/pdf',
}

/** The media type of a file: by extension, else plain text for UTF-8 and octet-stream for bytes. */
export function mimeTypeOf(file: Pick<DeliveredFile, 'path' | 'encoding'>): string {
  const ext = /\.([a-z0-9]+)$/i.exec(file.path)?.[1]?.toLowerCase()
  return (ext && MIME[ext]) || (file.encoding === 'utf8' ? 'text/plain' : 'application/octet-stream')
}

/** A file's URI. Each path segment is percent-encoded, so any stored path makes a valid URI. */
export function fileUri(skill: string, path: string): string {
  return `skill://${skill}/${path.split('/').map(encodeURIComponent).join('/')}`
}

/** The delivered skills, sorted by name (names are unique within a set). */
export function deliveredSkills(set: DeliverySet): DeliveredItem[] {
  return set.items
    .filter((item) => item.type === 'skill')
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

function skillDescription(item: DeliveredItem): string | undefined {
  const md = item.files.find((f) => f.path === 'SKILL.md')
  if (md?.encoding !== 'utf8') return undefined
  const match = /^---\r?\n[\s\S]*?^description:\s*(.+)$/m.exec(md.content)
  return match?.[1]?.trim().replace(/^(['"])(.*)\1$/, '$2')
}

/** Every resource of a set, in a stable order: the index, then each skill's SKILL.md and files. */
export function resourceEntries(set: DeliverySet): ResourceEntry[] {
  const entries: ResourceEntry[] = [
    {
      uri: INDEX_URI,
      name: 'index',
      title: 'Delivered skills',
      description: `The skills delivered to you in ${set.organization.name}, with versions and files (JSON)`,
      mimeType: 'application/json',
    },
  ]
  for (const item of deliveredSkills(set)) {
    const description = skillDescription(item)
    const files = [...item.files].sort((a, b) =>
      a.path === 'SKILL.md' ? -1 : b.path === 'SKILL.md' ? 1 : a.path < b.path ? -1 : 1,
    )
    for (const file of files) {
      entries.push({
        uri: fileUri(item.name, file.path),
        name: `${item.name}/${file.path}`,
        ...(file.path === 'SKILL.md' ? { title: item.name, ...(description ? { description } : {}) } : {}),
        mimeType: mimeTypeOf(file),
        size: file.size,
      })
    }
  }
  return entries
}

/** The index resource's JSON. */
export function indexJson(set: DeliverySet): string {
  return JSON.stringify({
    organization: set.organization,
    digest: set.digest,
    skills: deliveredSkills(set).map((item) => ({
      name: item.name,
      objectId: item.objectId,
      versionId: item.versionId,
      digest: item.digest,
      description: skillDescription(item) ?? null,
      uri: fileUri(item.name, 'SKILL.md'),
      reasons: item.reasons,
      files: item.files.map((f) => ({
        path: f.path,
        uri: fileUri(item.name, f.path),
        size: f.size,
        sha256: f.sha256,
        executable: f.executable,
      })),
    })),
  })
}

/** Splits a `skill://` URI into the skill's name and the file's path, or null when it is not one. */
export function parseFileUri(uri: string): { skill: string; path: string } | null {
  const match = /^skill:\/\/([a-z0-9][a-z0-9-]{0,127})\/(.+)$/.exec(uri)
  if (!match) return null
  try {
    return { skill: match[1]!, path: match[2]!.split('/').map(decodeURIComponent).join('/') }
  } catch {
    return null
  }
}

/** Finds a delivered file by URI. */
export function findFile(set: DeliverySet, uri: string): { item: DeliveredItem; file: DeliveredFile } | null {
  const parsed = parseFileUri(uri)
  if (!parsed) return null
  const item = set.items.find((i) => i.type === 'skill' && i.name === parsed.skill)
  const file = item?.files.find((f) => f.path === parsed.path)
  return item && file ? { item, file } : null
}

/** A content fingerprint per URI of a set, to tell which subscribed resources changed. */
export function fingerprints(set: DeliverySet): Map<string, string> {
  const out = new Map<string, string>([[INDEX_URI, set.digest]])
  for (const item of deliveredSkills(set))
    for (const file of item.files) out.set(fileUri(item.name, file.path), `${file.sha256}:${file.executable}`)
  return out
}

/** The content of a file resource (text exactly as stored; other bytes as base64). */
export function fileContent(uri: string, file: DeliveredFile): ResourceContent {
  const mimeType = mimeTypeOf(file)
  return file.encoding === 'utf8' ? { uri, mimeType, text: file.content } : { uri, mimeType, blob: file.content }
}
