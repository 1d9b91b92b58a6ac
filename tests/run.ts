/**
 * The test entry (`npm test`): imports every suite, runs them with uvu, and prints a last line
 * `N passed, N failed` (CI reads that line; uvu's own summary is not machine-read).
 *
 * Suites: colocated `src/**\/*.test.ts` (unit and in-process HTTP), then `tests/**\/*.test.ts`
 * (the compiled binary and Deno smoke runs). Arguments filter files by substring.
 * @module
 */
import { readdirSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const root = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..')

function find(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir).sort()) {
    if (name === 'node_modules' || name.startsWith('.')) continue
    const path = join(dir, name)
    if (statSync(path).isDirectory()) find(path, out)
    else if (name.endsWith('.test.ts')) out.push(path)
  }
  return out
}

const filters = process.argv.slice(2)
const files = [...find(join(root, 'src')), ...find(join(root, 'tests'))].filter(
  (file) => filters.length === 0 || filters.some((f) => relative(root, file).includes(f)),
)

type Outcome = [string | true, number, number, number]
type Queued = () => Promise<Outcome>
const g = globalThis as unknown as {
  UVU_DEFER: number
  UVU_QUEUE: Array<[string | null, ...Queued[]]>
  UVU_INDEX: number
}
g.UVU_DEFER = 1
g.UVU_QUEUE = []

const { exec } = await import('uvu')
for (const [index, file] of files.entries()) {
  g.UVU_INDEX = index
  g.UVU_QUEUE.push([relative(root, file)])
  await import(pathToFileURL(file).href)
}

// Count outcomes by wrapping each queued suite runner; uvu's exec() returns nothing we can read.
let passed = 0
let total = 0
let skipped = 0
for (const group of g.UVU_QUEUE) {
  for (let i = 1; i < group.length; i++) {
    const run = group[i] as Queued
    group[i] = async () => {
      const outcome = await run()
      passed += outcome[1]
      skipped += outcome[2]
      total += outcome[3]
      return outcome
    }
  }
}

await exec(false)
const failed = total - passed
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`)
process.exit(failed > 0 || total === 0 ? 1 : 0)
