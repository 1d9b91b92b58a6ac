/**
 * Which files of a source are importable and what they become: discovery's classification of a
 * tree (skills, commands, agents, tools, plugin manifests) and the path selectors of mappings.
 * @module
 */
import type { SourceEntry } from './sources/source.ts'

/** Kinds of importable items discovery reports. */
export const ITEM_KINDS = ['skill', 'command', 'agent', 'tool', 'plugin_manifest'] as const
/** An item kind. */
export type ItemKind = (typeof ITEM_KINDS)[number]

/** One importable item found by discovery. */
export interface DiscoveredItem {
  path: string
  kind: ItemKind
  /** The config object type a mapping would create (manifests are reported, not imported). */
  objectType: 'skill' | 'command' | 'agent' | 'tool' | null
  name: string
  size: number
  /** A mapping selector that picks this item and its siblings. */
  suggestedSelector: string
}

const base = (path: string) => path.slice(path.lastIndexOf('/') + 1)
const parent = (path: string) => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '')
const stem = (path: string) => base(path).replace(/\.[^.]+$/, '')
const under = (dir: string, tail: string) => (dir ? `${dir}/${tail}` : tail)

/** Classifies one path, or null when it is not importable. */
export function classifyPath(entry: SourceEntry): DiscoveredItem | null {
  const { path } = entry
  if (base(path) === 'SKILL.md') {
    const dir = parent(path)
    return { path, kind: 'skill', objectType: 'skill', name: base(dir) || 'skill', size: entry.size, suggestedSelector: under(parent(dir), '*/SKILL.md') }
  }
  let match = /^(.*?)(?:^|\/)\.opencode\/commands?\/([^/]+)\.md$/.exec(path)
  if (match) return { path, kind: 'command', objectType: 'command', name: match[2]!, size: entry.size, suggestedSelector: `${parent(path)}/*.md` }
  match = /^(.*?)(?:^|\/)(?:\.opencode\/)?agents?\/([^/]+)\.md$/.exec(path)
  if (match) return { path, kind: 'agent', objectType: 'agent', name: match[2]!, size: entry.size, suggestedSelector: `${parent(path)}/*.md` }
  match = /^(.*?)(?:^|\/)\.opencode\/tools?\/([^/]+)\.(ts|js|mjs)$/.exec(path)
  if (match) return { path, kind: 'tool', objectType: 'tool', name: match[2]!, size: entry.size, suggestedSelector: `${parent(path)}/*.${match[3]}` }
  if (/(^|\/)(\.claude-plugin\/plugin\.json|\.opencode\/plugin\.json|plugin\.json|opencode\.jsonc?)$/.test(path)) {
    return { path, kind: 'plugin_manifest', objectType: null, name: base(parent(path)) || stem(path), size: entry.size, suggestedSelector: path }
  }
  return null
}

/**
 * A path selector as a regular expression: `*` matches within one path segment, `**` any number
 * of segments, `?` one character; everything else is literal. Matched against the whole path.
 */
export function selectorRegExp(selector: string): RegExp {
  let out = ''
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i]!
    if (c === '*' && selector[i + 1] === '*') {
      const slash = selector[i + 2] === '/'
      out += slash ? '(?:.*/)?' : '.*'
      i += slash ? 2 : 1
    } else if (c === '*') out += '[^/]*'
    else if (c === '?') out += '[^/]'
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&')
  }
  return new RegExp(`^${out}$`)
}

/** Checks a selector; returns an error message or null. */
export function checkSelector(selector: string): string | null {
  if (selector.startsWith('/') || selector.split('/').includes('..')) return 'must be a relative path pattern without ..'
  if (!/^[\w.*?/@+ -]+$/.test(selector)) return 'may contain letters, digits, . _ - @ + space, / and the wildcards * ** ?'
  return null
}

/** A title for a synced item: a skill's directory, otherwise the file name without extension. */
export function itemTitle(path: string, objectType: string): string {
  if (objectType === 'skill' && base(path) === 'SKILL.md') return base(parent(path)) || 'skill'
  return stem(path) || path
}
