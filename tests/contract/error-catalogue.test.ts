import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { createControlPlaneApp } from '../../src/control-plane/app.ts'
import { loadControlPlaneConfig } from '../../src/control-plane/config.ts'
import { CONTROL_PLANE_ERRORS } from '../../src/control-plane/control-plane-errors.ts'
import { CORE_ERRORS } from '../../src/core/core-errors.ts'
import { type ErrorCatalogue, listErrorCodes } from '../../src/core/error-catalogue.ts'
import { silentLogger } from '../../src/core/logger.ts'
import type { Surface } from '../../src/core/surface.ts'
import { OPENCODE_ERRORS } from '../../src/opencode/opencode-errors.ts'
import { createWorkspaceApp } from '../../src/workspace/app.ts'
import { loadWorkspaceConfig } from '../../src/workspace/config/server-config.ts'
import { WORKSPACE_ERRORS } from '../../src/workspace/workspace-errors.ts'
import { assert, request, suite, tempDir } from '../harness.ts'

/**
 * Every error code a source file can produce is in the catalogue of the code it runs in, with the
 * status it is produced with, and each surface's `/openapi.json` lists its whole catalogue.
 *
 * The scan reads the sources rather than trusting types because a few makers still take a code as
 * a string or fix one (`ApiError` and its subclasses, the `errors.*` shorthands, the validation
 * policy), and because the status a call site expects must agree with the catalogue's.
 */
const catalogue = suite('contract/error-catalogue', { timeoutMs: 60_000 })

const SRC = join(import.meta.dirname, '../../src')

/** The catalogue each part of the tree may produce codes from. */
function catalogueFor(file: string): { name: string; codes: ErrorCatalogue } {
  const rel = relative(SRC, file)
  if (rel.startsWith('workspace/')) return { name: 'WORKSPACE_ERRORS', codes: WORKSPACE_ERRORS }
  if (rel.startsWith('control-plane/')) return { name: 'CONTROL_PLANE_ERRORS', codes: CONTROL_PLANE_ERRORS }
  if (rel.startsWith('opencode/')) return { name: 'OPENCODE_ERRORS', codes: { ...CORE_ERRORS, ...OPENCODE_ERRORS } }
  // core, storage, console (served by both surfaces), the entry points.
  return { name: 'CORE_ERRORS', codes: CORE_ERRORS }
}

function* sourceFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) yield* sourceFiles(path)
    else if (/\.(ts|mts)$/.test(name) && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')) yield path
  }
}

/** The top-level argument texts of the call whose `(` is at `open`; string literals are skipped whole. */
function callArguments(text: string, open: number): string[] {
  const args: string[] = []
  let depth = 0
  let start = open + 1
  for (let i = open; i < text.length; i++) {
    const c = text[i]!
    if (c === "'" || c === '"' || c === '`') {
      for (i++; i < text.length && text[i] !== c; i++) if (text[i] === '\\') i++
      continue
    }
    if (c === '(' || c === '[' || c === '{') depth++
    else if (c === ')' || c === ']' || c === '}') {
      depth--
      if (depth === 0) {
        const last = text.slice(start, i).trim()
        if (last) args.push(last)
        return args
      }
    } else if (c === ',' && depth === 1) {
      args.push(text.slice(start, i).trim())
      start = i + 1
    }
  }
  return args
}

interface Produced {
  file: string
  line: number
  code: string
  /** The status the call site states, when it states one. */
  status?: number
}

/** How each kind of call names its code and status: [pattern, index of the code argument, status]. */
const MAKERS: Array<[RegExp, number, number | 'first-argument' | undefined, string?]> = [
  [/\bnew \w*ApiError\(/g, 1, 'first-argument'],
  [/\bsuper\((?=\s*\d{3}\s*,\s*')/g, 1, 'first-argument'],
  [/\b(?:coreError|opencodeError|workspaceError|controlPlaneError)\(/g, 0, undefined],
  [/\bzipError\(/g, 0, undefined],
  [/\bpreviewConflict\(/g, 0, 409],
  [/\berrors\.unauthorized\(/g, -1, 401, 'unauthorized'],
  [/\berrors\.tooManyRequests\(/g, -1, 429, 'rate_limited'],
  [/\berrors\.internal\(/g, -1, 500, 'internal_error'],
]

/** Call sites whose code is not a literal, each with why it is still only ever a catalogued code. */
const COMPUTED_CODES: Record<string, string> = {
  'core/errors.ts': 'the shorthands themselves; their call sites are scanned',
  'core/error-catalogue.ts': 'the factory; its code parameter is typed by the catalogue',
  'opencode/skill-zip.ts': 'zipError(code) is typed by the catalogue; its call sites are scanned',
  'core/validation.ts': "the surface's validation policy codes (bodyCode/queryCode), scanned below",
  'control-plane/catalog/skill-import.ts': 'rephrases an error already made from the catalogue, keeping its code',
  'control-plane/catalog/grant-roles.ts': 'RESOURCE_TABLES[type].notFound, each literal checked by the reverse scan',
  'workspace/artifacts/drop-folder.ts': 'codes passed by inbox-routes.ts, literals checked by the reverse scan',
  'workspace/portability/workspace-import.ts': 'previewConflict(code) is typed by the catalogue',
  'control-plane/scim/scim-error.ts':
    'codes from its scimType and status tables, typed by the catalogue and checked by the reverse scan; asScimError re-shapes an error already made',
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length
}

function scan(): { produced: Produced[]; computed: string[] } {
  const produced: Produced[] = []
  const computed: string[] = []
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8')
    const rel = relative(SRC, file)
    for (const [pattern, codeAt, status, fallback] of MAKERS) {
      for (const match of text.matchAll(pattern)) {
        const open = match.index! + match[0].length - 1
        if (text[open] !== '(') continue
        const args = callArguments(text, open)
        const line = lineOf(text, match.index!)
        const codeArg = codeAt >= 0 ? args[codeAt] : undefined
        const literal = codeArg === undefined ? fallback : /^'([a-z0-9_]+)'$/.exec(codeArg)?.[1]
        if (!literal) {
          if (codeArg === undefined && fallback === undefined) continue
          computed.push(`${rel}:${line}`)
          continue
        }
        const stated = status === 'first-argument' ? Number(args[0]) : status
        produced.push({ file: rel, line, code: literal, status: Number.isNaN(stated) ? undefined : stated })
      }
    }
    for (const match of text.matchAll(/\b(?:bodyCode|queryCode):\s*'([a-z0-9_]+)'/g))
      produced.push({ file: rel, line: lineOf(text, match.index!), code: match[1]! })
  }
  return { produced, computed }
}

catalogue('every code a source file produces is in its catalogue, with the status it is produced with', () => {
  const { produced } = scan()
  assert.ok(produced.length > 150, `the scan found ${produced.length} error sites; it should find them all`)
  const problems: string[] = []
  for (const site of produced) {
    const { name, codes } = catalogueFor(join(SRC, site.file))
    const entry = codes[site.code]
    if (!entry) problems.push(`${site.file}:${site.line} produces ${site.code}, which ${name} does not declare`)
    else if (site.status !== undefined && site.status !== entry.status && !entry.otherStatuses?.includes(site.status))
      problems.push(`${site.file}:${site.line} answers ${site.code} with ${site.status}; ${name} says ${entry.status}`)
  }
  assert.equal(problems, [])
})

catalogue('a code the scan cannot read is made only where the reason is written down', () => {
  const { computed } = scan()
  const unexplained = computed.filter((site) => !(site.split(':')[0]! in COMPUTED_CODES))
  assert.equal(unexplained, [])
})

catalogue('every catalogued code is spelled somewhere in the sources that may produce it', () => {
  const texts = new Map<string, string>()
  for (const file of sourceFiles(SRC)) {
    const rel = relative(SRC, file)
    if (rel.endsWith('-errors.ts')) continue
    const area = rel.split('/')[0]!
    texts.set(area, (texts.get(area) ?? '') + readFileSync(file, 'utf8'))
  }
  const inAreas = (code: string, areas: string[]) => areas.some((a) => texts.get(a)?.includes(`'${code}'`))
  const shared = ['core', 'storage', 'console', 'opencode']
  const dead = [
    ...Object.keys(CORE_ERRORS)
      .filter((code) => !inAreas(code, [...shared, 'workspace', 'control-plane']))
      .map((c) => `CORE_ERRORS.${c}`),
    ...Object.keys(OPENCODE_ERRORS)
      .filter((code) => !inAreas(code, ['opencode']))
      .map((c) => `OPENCODE_ERRORS.${c}`),
    ...Object.keys(WORKSPACE_ERRORS)
      .filter((code) => !inAreas(code, [...shared, 'workspace']))
      .map((c) => `WORKSPACE_ERRORS.${c}`),
    ...Object.keys(CONTROL_PLANE_ERRORS)
      .filter((code) => !inAreas(code, [...shared, 'control-plane']))
      .map((c) => `CONTROL_PLANE_ERRORS.${c}`),
  ]
  assert.equal(dead, [], 'catalogued codes nothing produces')
})

const dir = tempDir('svc-error-catalogue-')
const surfaces: Record<string, Surface> = {}

catalogue.before(async () => {
  const env = { HOME: dir.path }
  writeFileSync(join(dir.path, 'server.json'), '{}')
  surfaces.workspace = await createWorkspaceApp(
    loadWorkspaceConfig({ config: join(dir.path, 'server.json'), 'data-dir': join(dir.path, 'data') }, env, dir.path),
    { logger: silentLogger },
  )
  surfaces['control-plane'] = await createControlPlaneApp(
    loadControlPlaneConfig({ 'data-dir': join(dir.path, 'cp') }, env, dir.path),
    { logger: silentLogger },
  )
})

catalogue.after(async () => {
  for (const surface of Object.values(surfaces)) await surface.close()
  dir.remove()
})

for (const [mode, codes] of [
  ['workspace', WORKSPACE_ERRORS],
  ['control-plane', CONTROL_PLANE_ERRORS],
] as const) {
  catalogue(`the ${mode} /openapi.json lists every code of its catalogue with status and meaning`, async () => {
    const res = await request(surfaces[mode]!.fetch, '/openapi.json')
    assert.is(res.status, 200)
    const doc = (await res.json()) as { components: { schemas: { ErrorBody: Record<string, unknown> } } }
    const listed = doc.components.schemas.ErrorBody['x-error-codes'] as Array<{ code: string; status: number }>
    assert.equal(listed, listErrorCodes(codes))
    assert.equal(listed.map((e) => e.code).sort(), Object.keys(codes).sort())
    assert.ok(listed.every((e) => e.status >= 400 && e.status <= 599))
  })
}

catalogue.run()
