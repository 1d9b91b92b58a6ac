/**
 * Catalog snapshot: a page of a workspace's files (and optionally directories) under a prefix,
 * with key-set paging. Order is component-wise (a directory, then everything inside it, then its
 * next sibling), which is the order a sorted depth-first walk produces; `after` is exclusive and
 * lets the walk skip every subtree before it, so each page costs about its own size, not the
 * tree's. Symlinks are neither listed nor followed (a mirror never sees outside the root), server
 * temp files are hidden, and unreadable directories are reported in `skippedDirectories` instead
 * of failing the page.
 * @module
 */
import { lstatSync, readdirSync, type Dirent, type Stats } from 'node:fs'
import * as fsp from 'node:fs/promises'
import { join } from 'node:path'
import { revisionOf } from './catalog-events.ts'
import { isTempName, resolveExisting } from '../base/workspace-path.ts'
import { workspaceError } from '../workspace-errors.ts'

/** One catalog entry. */
export interface CatalogItem {
  path: string
  kind: 'file' | 'dir'
  size: number
  mtimeMs: number
  revision: string
}

/** Snapshot options. */
export interface SnapshotOptions {
  /** Normalised prefix ('' for the whole workspace). */
  prefix: string
  /** Normalised exclusive start (a previous page's `nextAfter`). */
  after?: string
  limit: number
  includeDirs: boolean
  excludeHeavyDirectories: boolean
}

/** A snapshot page. */
export interface SnapshotPage {
  items: CatalogItem[]
  truncated: boolean
  nextAfter?: string
  incomplete: boolean
  skippedDirectories: string[]
}

/** Directories skipped with `excludeHeavyDirectories`. */
export const HEAVY_DIRECTORIES = new Set(['.git', 'node_modules'])

/** Compares two normalised paths component-wise (the catalog's order). */
export function comparePaths(a: string, b: string): number {
  const pa = a.split('/')
  const pb = b.split('/')
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    if (pa[i] !== pb[i]) return pa[i]! < pb[i]! ? -1 : 1
  }
  return pa.length - pb.length
}

const byName = (a: Dirent, b: Dirent) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** Walks one page of the catalog. */
export async function catalogSnapshot(root: string, options: SnapshotOptions): Promise<SnapshotPage> {
  const items: CatalogItem[] = []
  const skipped: string[] = []
  const want = options.limit + 1
  const item = (rel: string, st: Stats, dir: boolean): CatalogItem => ({
    path: rel,
    kind: dir ? 'dir' : 'file',
    size: dir ? 0 : st.size,
    mtimeMs: st.mtimeMs,
    revision: revisionOf({ mtimeMs: st.mtimeMs, size: dir ? 0 : st.size }),
  })

  let start = root
  if (options.prefix) {
    const real = await resolveExisting(root, options.prefix)
    if (real === null) return { items, truncated: false, incomplete: false, skippedDirectories: [] }
    const st = await fsp.lstat(real)
    if (st.isFile()) {
      const inRange = !options.after || comparePaths(options.prefix, options.after) > 0
      return {
        items: inRange ? [item(options.prefix, st, false)] : [],
        truncated: false,
        incomplete: false,
        skippedDirectories: [],
      }
    }
    if (!st.isDirectory()) return { items, truncated: false, incomplete: false, skippedDirectories: [] }
    start = real
  }
  // `after` outside the prefix: before it means "from the start", after it means "nothing left".
  let afterParts: string[] | null = null
  if (options.after) {
    const p = options.prefix
    if (!p || options.after === p || options.after.startsWith(p + '/'))
      afterParts = (p ? options.after.slice(p.length + 1) : options.after).split('/').filter(Boolean)
    else if (comparePaths(options.after, p) > 0)
      return { items, truncated: false, incomplete: false, skippedDirectories: [] }
    if (afterParts && afterParts.length === 0) afterParts = null
  }

  const walkDir = async (abs: string, rel: string, after: string[] | null): Promise<void> => {
    let entries: Dirent[]
    try {
      // Synchronous on purpose: a page is at most 10,000 entries, and directory reads and stats
      // served from the dentry cache cost less than the thread hop an async call adds per entry.
      entries = readdirSync(abs, { withFileTypes: true })
    } catch (error) {
      if (rel === options.prefix)
        throw workspaceError('workspace_permission_denied', 'The requested directory cannot be read', {
          details: { code: (error as NodeJS.ErrnoException).code },
        })
      skipped.push(rel)
      return
    }
    entries = entries.filter((e) => (e.isFile() || e.isDirectory()) && !isTempName(e.name)).sort(byName)
    let i = 0
    if (after) {
      const first = after[0]!
      while (i < entries.length && entries[i]!.name < first) i++
      const hit = entries[i]
      if (hit && hit.name === first) {
        // The `after` entry itself was on an earlier page; resume inside it, then continue.
        if (hit.isDirectory() && !(options.excludeHeavyDirectories && HEAVY_DIRECTORIES.has(hit.name))) {
          await walkDir(
            join(abs, hit.name),
            rel ? `${rel}/${hit.name}` : hit.name,
            after.length > 1 ? after.slice(1) : null,
          )
        }
        i++
      }
    }
    const base = abs.endsWith('/') ? abs : `${abs}/`
    for (; i < entries.length && items.length < want; i++) {
      const entry = entries[i]!
      const st = lstatSync(base + entry.name, { throwIfNoEntry: false })
      if (!st) continue
      const childRel = rel ? `${rel}/${entry.name}` : entry.name
      if (st.isFile()) items.push(item(childRel, st, false))
      else if (st.isDirectory()) {
        if (options.excludeHeavyDirectories && HEAVY_DIRECTORIES.has(entry.name)) continue
        if (options.includeDirs) items.push(item(childRel, st, true))
        if (items.length < want) await walkDir(base + entry.name, childRel, null)
      }
    }
  }

  await walkDir(start, options.prefix, afterParts)
  const truncated = items.length > options.limit
  if (truncated) items.length = options.limit
  const page: SnapshotPage = { items, truncated, incomplete: skipped.length > 0, skippedDirectories: skipped }
  if (truncated) page.nextAfter = items[items.length - 1]!.path
  return page
}
