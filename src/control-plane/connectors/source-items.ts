/**
 * Which files of a source are importable and what they become: discovery's classification of a
 * tree (skills, commands, agents, tools, plugin manifests) and the path selectors of mappings.
 * @module
 */
import { isExcludedSegment, SKILL_FILE } from '../../opencode/skill-bundle.ts'
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
  /** Skills: files of the folder a sync brings (SKILL.md included). */
  fileCount?: number
}

const base = (path: string) => path.slice(path.lastIndexOf('/') + 1)
const parent = (path: string) => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '')
const stem = (path: string) => base(path).replace(/\.[^.]+$/, '')
const under = (dir: string, tail: string) => (dir ? `${dir}/${tail}` : tail)

/**
 * The files a skill brings besides its SKILL.md at `skillMdPath`: every regular file under the
 * same folder, except those of a skill folder nested inside it (that is its own skill), symbolic
 * links (never imported) and `.git`, `node_modules` and `.DS_Store` entries. Sorted by path.
 */
export function skillFolderEntries(entries: SourceEntry[], skillMdPath: string): SourceEntry[] {
  const dir = parent(skillMdPath)
  const prefix = dir ? `${dir}/` : ''
  const inside = entries.filter((e) => e.path.startsWith(prefix) && e.path !== skillMdPath)
  const nested = inside.filter((e) => base(e.path) === SKILL_FILE).map((e) => `${parent(e.path)}/`)
  return inside.filter(
    (e) =>
      !e.symlink &&
      !nested.some((n) => e.path.startsWith(n)) &&
      !e.path
        .slice(prefix.length)
        .split('/')
        .some((part) => isExcludedSegment(part)),
  )
}

/** Classifies one path, or null when it is not importable. */
export function classifyPath(entry: SourceEntry): DiscoveredItem | null {
  const { path } = entry
  if (base(path) === 'SKILL.md') {
    const dir = parent(path)
    return {
      path,
      kind: 'skill',
      objectType: 'skill',
      name: base(dir) || 'skill',
      size: entry.size,
      suggestedSelector: under(parent(dir), '*/SKILL.md'),
    }
  }
  let match = /^(.*?)(?:^|\/)\.opencode\/commands?\/([^/]+)\.md$/.exec(path)
  if (match)
    return {
      path,
      kind: 'command',
      objectType: 'command',
      name: match[2]!,
      size: entry.size,
      suggestedSelector: `${parent(path)}/*.md`,
    }
  match = /^(.*?)(?:^|\/)(?:\.opencode\/)?agents?\/([^/]+)\.md$/.exec(path)
  if (match)
    return {
      path,
      kind: 'agent',
      objectType: 'agent',
      name: match[2]!,
      size: entry.size,
      suggestedSelector: `${parent(path)}/*.md`,
    }
  match = /^(.*?)(?:^|\/)\.opencode\/tools?\/([^/]+)\.(ts|js|mjs)$/.exec(path)
  if (match)
    return {
      path,
      kind: 'tool',
      objectType: 'tool',
      name: match[2]!,
      size: entry.size,
      suggestedSelector: `${parent(path)}/*.${match[3]}`,
    }
  if (/(^|\/)(\.claude-plugin\/plugin\.json|\.opencode\/plugin\.json|plugin\.json|opencode\.jsonc?)$/.test(path)) {
    return {
      path,
      kind: 'plugin_manifest',
      objectType: null,
      name: base(parent(path)) || stem(path),
      size: entry.size,
      suggestedSelector: path,
    }
  }
  return null
}

/** Matches whole paths against one compiled selector (see {@link compileSelector}). */
export interface SelectorMatcher {
  /** True when the selector matches all of `path`. */
  test(path: string): boolean
}

/** Line terminators: `**` never consumed them (it used to compile to `.*`), while `*` and `?` do. */
const isLineBreak = (c: string) => c === '\n' || c === '\r' || c === '\u2028' || c === '\u2029'
const notSlash = (c: string) => c !== '/'
const anyButLineBreak = (c: string) => !isLineBreak(c)
const isSlash = (c: string) => c === '/'
const inSegment = (c: string) => c !== '/' && !isLineBreak(c)

interface State {
  /** States reachable without consuming a character (always later states). */
  skip: number[]
  /** On a character `accepts` takes, go to `to`. */
  moves: Array<{ accepts: (c: string) => boolean; to: number }>
}

/**
 * Compiles a path selector: `*` matches within one path segment (any run of characters but `/`),
 * `**` any run of characters across segments, `**` directly followed by `/` nothing or any text
 * ending in `/` (so `**` `/SKILL.md` also matches a top-level `SKILL.md`), `?` one character other
 * than `/`; everything else is literal. The selector must match the whole path.
 *
 * Matching simulates the pattern as a set of states, one pass over the path: time is at most
 * path length × selector length whatever the wildcards, so no selector can stall the process
 * (the former backtracking RegExp took minutes for `'**'.repeat(10) + 'Z'`). The semantics are
 * exactly those of that RegExp, down to `**` not crossing line breaks.
 */
export function compileSelector(selector: string): SelectorMatcher {
  const states: State[] = []
  const add = () => states.push({ skip: [], moves: [] }) - 1
  let at = add()
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i]!
    const from = states[at]!
    if (c === '*' && selector[i + 1] === '*' && selector[i + 2] === '/') {
      // Nothing, or text ending in `/`: `from` means "consumed nothing or up to a slash",
      // `inside` means "consumed text since the last slash".
      const inside = add()
      const next = add()
      from.skip.push(next)
      from.moves.push({ accepts: isSlash, to: at }, { accepts: inSegment, to: inside })
      states[inside]!.moves.push({ accepts: isSlash, to: at }, { accepts: inSegment, to: inside })
      at = next
      i += 2
    } else if (c === '*') {
      const across = selector[i + 1] === '*'
      const next = add()
      from.skip.push(next)
      from.moves.push({ accepts: across ? anyButLineBreak : notSlash, to: at })
      at = next
      if (across) i += 1
    } else {
      const next = add()
      from.moves.push({ accepts: c === '?' ? notSlash : (x) => x === c, to: next })
      at = next
    }
  }
  const final = at
  // Scratch space reused across calls; `test` is synchronous, so calls never interleave.
  const seen = new Uint32Array(states.length)
  let stamp = 0
  /** Adds `state` and every state it skips to (once per step) to `into`. */
  const enter = (state: number, into: number[]) => {
    const pending = [state]
    for (let s = pending.pop(); s !== undefined; s = pending.pop()) {
      if (seen[s] === stamp) continue
      seen[s] = stamp
      into.push(s)
      pending.push(...states[s]!.skip)
    }
  }
  return {
    test(path: string): boolean {
      if (stamp >= 0xfffffff0) {
        seen.fill(0)
        stamp = 0
      }
      let current: number[] = []
      stamp++
      enter(0, current)
      for (let i = 0; i < path.length && current.length > 0; i++) {
        const c = path[i]!
        const next: number[] = []
        stamp++
        for (const state of current) {
          for (const move of states[state]!.moves) if (move.accepts(c)) enter(move.to, next)
        }
        current = next
      }
      return current.includes(final)
    },
  }
}

/** Checks a selector; returns an error message or null. */
export function checkSelector(selector: string): string | null {
  if (selector.startsWith('/') || selector.split('/').includes('..'))
    return 'must be a relative path pattern without ..'
  if (!/^[\w.*?/@+ -]+$/.test(selector))
    return 'may contain letters, digits, . _ - @ + space, / and the wildcards * ** ?'
  return null
}

/** A title for a synced item: a skill's directory, otherwise the file name without extension. */
export function itemTitle(path: string, objectType: string): string {
  if (objectType === 'skill' && base(path) === 'SKILL.md') return base(parent(path)) || 'skill'
  return stem(path) || path
}
