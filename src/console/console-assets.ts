/**
 * The console's static files as a table of responses-to-be: each file is imported as text (so the
 * compiled binary carries it and `npm start` from source serves the same bytes), its references to
 * sibling files are rewritten to content-hashed names, and it is gzipped once.
 *
 * Hashing happens here at first use rather than in a build step: the tests and `bun` from source
 * serve exactly what the binary serves, and a hashed name can be cached by browsers for a year
 * because a changed file (or a changed dependency of it) gets a new name.
 * @module
 */
import { gzipSync } from 'node:zlib'
import { sha256Hex } from '../core/sha256.ts'
import indexHtml from './web/index.html' with { type: 'text' }
import consoleCss from './web/console.css' with { type: 'text' }
import mainJs from './web/main.mjs' with { type: 'text' }
import domJs from './web/dom.mjs' with { type: 'text' }
import apiJs from './web/api.mjs' with { type: 'text' }
import sseJs from './web/sse.mjs' with { type: 'text' }
import wsAppJs from './web/ws-app.mjs' with { type: 'text' }
import wsApprovalsJs from './web/ws-approvals.mjs' with { type: 'text' }
import wsTokensJs from './web/ws-tokens.mjs' with { type: 'text' }
import wsWorkspaceJs from './web/ws-workspace.mjs' with { type: 'text' }
import wsActivityJs from './web/ws-activity.mjs' with { type: 'text' }
import wsPortabilityJs from './web/ws-portability.mjs' with { type: 'text' }
import cpAppJs from './web/cp-app.mjs' with { type: 'text' }
import cpOrgJs from './web/cp-org.mjs' with { type: 'text' }
import cpKeysJs from './web/cp-keys.mjs' with { type: 'text' }
import cpOAuthJs from './web/cp-oauth.mjs' with { type: 'text' }
import cpWorkersJs from './web/cp-workers.mjs' with { type: 'text' }
import cpFeedJs from './web/cp-feed.mjs' with { type: 'text' }
import cpSkillsJs from './web/cp-skills.mjs' with { type: 'text' }
import cpConfigJs from './web/cp-config.mjs' with { type: 'text' }
import cpDiffJs from './web/cp-diff.mjs' with { type: 'text' }
import cpConnectorsJs from './web/cp-connectors.mjs' with { type: 'text' }
import cpCatalogJs from './web/cp-catalog.mjs' with { type: 'text' }

/** Source files by their unhashed name. Every file the page can load is listed here. */
const SOURCES: Record<string, string> = {
  'console.css': consoleCss,
  'main.mjs': mainJs,
  'dom.mjs': domJs,
  'api.mjs': apiJs,
  'sse.mjs': sseJs,
  'ws-app.mjs': wsAppJs,
  'ws-approvals.mjs': wsApprovalsJs,
  'ws-tokens.mjs': wsTokensJs,
  'ws-workspace.mjs': wsWorkspaceJs,
  'ws-activity.mjs': wsActivityJs,
  'ws-portability.mjs': wsPortabilityJs,
  'cp-app.mjs': cpAppJs,
  'cp-org.mjs': cpOrgJs,
  'cp-keys.mjs': cpKeysJs,
  'cp-oauth.mjs': cpOAuthJs,
  'cp-workers.mjs': cpWorkersJs,
  'cp-feed.mjs': cpFeedJs,
  'cp-skills.mjs': cpSkillsJs,
  'cp-config.mjs': cpConfigJs,
  'cp-diff.mjs': cpDiffJs,
  'cp-connectors.mjs': cpConnectorsJs,
  'cp-catalog.mjs': cpCatalogJs,
}

/** One servable file. */
export interface ConsoleAsset {
  /** The URL name under `/console/` (hashed for everything but the page itself). */
  name: string
  contentType: string
  body: Uint8Array
  gzip: Uint8Array
}

/** The page plus its hashed files. */
export interface ConsoleAssets {
  page: ConsoleAsset
  /** Hashed name → asset. */
  files: Map<string, ConsoleAsset>
}

const TYPES: Record<string, string> = {
  mjs: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  html: 'text/html; charset=utf-8',
}

// `./name.mjs` in module imports, `/console/name.ext` in the page: the only ways files refer to each other.
const MODULE_REF = /(["'])\.\/([a-z0-9-]+\.mjs)\1/g
const PAGE_REF = /(["'])\/console\/([a-z0-9-]+\.(?:mjs|css))\1/g

function asset(name: string, text: string): ConsoleAsset {
  const body = new TextEncoder().encode(text)
  const ext = name.slice(name.lastIndexOf('.') + 1)
  return { name, contentType: TYPES[ext] ?? 'application/octet-stream', body, gzip: gzipSync(body, { level: 9 }) }
}

/**
 * Builds the table from `sources` (exported for tests, which check the rewriting on small inputs).
 * A reference to a file that is not listed is an error: the page would otherwise fail at run time.
 */
export function buildConsoleAssets(page: string, sources: Record<string, string>): ConsoleAssets {
  const hashed = new Map<string, string>()
  const files = new Map<string, ConsoleAsset>()
  const visiting = new Set<string>()
  const resolve = (name: string): string => {
    const known = hashed.get(name)
    if (known) return known
    const source = sources[name]
    if (source === undefined) throw new Error(`console file ${name} is referenced but not embedded`)
    if (visiting.has(name)) throw new Error(`console modules import each other in a cycle through ${name}`)
    visiting.add(name)
    // A module's hash covers its dependencies' hashed names, so changing a leaf renames every importer.
    const text = name.endsWith('.mjs')
      ? source.replace(MODULE_REF, (_, quote: string, dep: string) => `${quote}./${resolve(dep)}${quote}`)
      : source
    visiting.delete(name)
    const digest = sha256Hex(text).slice(0, 12)
    const dot = name.lastIndexOf('.')
    const out = `${name.slice(0, dot)}.${digest}${name.slice(dot)}`
    hashed.set(name, out)
    files.set(out, asset(out, text))
    return out
  }
  const html = page.replace(PAGE_REF, (_, quote: string, file: string) => `${quote}/console/${resolve(file)}${quote}`)
  // Files nothing references yet (loaded by a later import) are still served under their hash.
  for (const name of Object.keys(sources)) resolve(name)
  return { page: asset('index.html', html), files }
}

let built: ConsoleAssets | undefined

/** The embedded console, built on first use (a server that never serves it pays nothing). */
export function consoleAssets(): ConsoleAssets {
  return (built ??= buildConsoleAssets(indexHtml, SOURCES))
}
