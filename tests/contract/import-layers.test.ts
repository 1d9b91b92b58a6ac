import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { assert, suite } from '../harness.ts'

/**
 * Imports run one way. Inside the workspace surface each room (a folder, or a top-level file)
 * imports only rooms listed before it in {@link WORKSPACE_ROOMS}; the console imports neither
 * surface (the workspace's console wiring lives in the workspace). Read from the sources' import
 * statements, tests left out: a test may reach any room it checks.
 */
const layers = suite('contract/import-layers')

const SRC = join(import.meta.dirname, '../../src')

/** The workspace surface's rooms, lowest first; a room may import those before it. */
const WORKSPACE_ROOMS = [
  'workspace-errors.ts',
  'base',
  'access',
  'artifacts',
  'config',
  'inbox',
  'events',
  'extensions',
  'approvals',
  'sidecar',
  'files',
  'runtime',
  'portability',
  'org-link',
  'routes',
  'app.ts',
  'testing',
]

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) sources(path, out)
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')) out.push(path)
  }
  return out
}

/** Relative import targets of a file, as paths under src/ (static imports, re-exports, `import()`). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const found: string[] = []
  for (const m of text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g))
    found.push(relative(SRC, resolve(dirname(file), m[1]!)))
  return found
}

const roomOf = (rel: string): string => rel.split('/')[1]!

layers('every import inside the workspace surface goes to its own room or one listed before it', () => {
  const upward: string[] = []
  for (const file of sources(join(SRC, 'workspace'))) {
    const from = relative(SRC, file)
    const own = WORKSPACE_ROOMS.indexOf(roomOf(from))
    assert.ok(own >= 0, `${from} is in a room the layer list does not name`)
    for (const target of importsOf(file)) {
      if (!target.startsWith('workspace/')) continue
      const to = WORKSPACE_ROOMS.indexOf(roomOf(target))
      if (to > own) upward.push(`${from} -> ${target}`)
    }
  }
  assert.equal(upward, [], `imports that run upward:\n${upward.join('\n')}`)
})

layers('the console imports neither surface', () => {
  const across: string[] = []
  for (const file of sources(join(SRC, 'console')))
    for (const target of importsOf(file))
      if (target.startsWith('workspace/') || target.startsWith('control-plane/'))
        across.push(`${relative(SRC, file)} -> ${target}`)
  assert.equal(across, [])
})

layers.run()
