/**
 * The test entry (`npm test`): imports every suite, runs them with uvu, and prints a last line
 * `N passed, N failed` (CI reads that line; uvu's own summary is not machine-read).
 *
 * Suites: colocated `src/**\/*.test.ts` (unit and in-process HTTP), then `tests/**\/*.test.ts`
 * (the compiled binary and Deno smoke runs). Arguments filter files by substring.
 *
 * The control-plane suites run twice: on SQLite in this process, then on PostgreSQL in a child
 * process (`SERVICE_TEST_ENGINE=postgres`) when `SERVICE_TEST_DATABASE_URL` names a server; each
 * test plane there gets its own database, and every database of the run is dropped at the end.
 * The last line counts both passes.
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

const startedAt = performance.now()
/** The top-level run (not the PostgreSQL pass it starts as a child). */
const topLevel = process.env.SERVICE_TEST_ENGINE !== 'postgres'

// A run killed before its end leaves its PostgreSQL test databases behind; drop those whose run is
// gone (or that are a day old) before this run creates its own.
if (topLevel && process.env.SERVICE_TEST_DATABASE_URL) {
  const { dropStaleRunDatabases } = await import('../src/control-plane/testing/test-database.ts')
  const stale = await dropStaleRunDatabases().catch((error) => {
    console.log(`could not look for stale test databases: ${error}`)
    return []
  })
  if (stale.length > 0) console.log(`dropped ${stale.length} test databases left by earlier runs that did not finish`)
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

const pgPass = await postgresPass()
passed += pgPass.passed
total += pgPass.total
skipped += pgPass.skipped
const failed = total - passed
if (topLevel) console.log(`wall time: ${formatDuration(performance.now() - startedAt)} (${files.length} suite files)`)
// Last, always: CI reads this line.
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`)
process.exit(failed > 0 || total === 0 ? 1 : 0)

/** Runs the control-plane suites of this selection again on PostgreSQL, in a child process. */
async function postgresPass(): Promise<{ passed: number; total: number; skipped: number }> {
  const none = { passed: 0, total: 0, skipped: 0 }
  if (process.env.SERVICE_TEST_ENGINE === 'postgres') return none
  const selected = files.map((file) => relative(root, file)).filter((file) => file.startsWith('src/control-plane/'))
  if (selected.length === 0) return none
  const url = process.env.SERVICE_TEST_DATABASE_URL
  if (!url) {
    console.log(
      'PostgreSQL runs of the control-plane suites skipped: SERVICE_TEST_DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/postgres; .ci/run sets it)',
    )
    return none
  }
  const { spawn } = await import('node:child_process')
  const { dropRunDatabases, newRunId, runPrefix } = await import('../src/control-plane/testing/test-database.ts')
  const runId = newRunId()
  console.log(`\nPostgreSQL pass: ${selected.length} control-plane suites`)
  const child = spawn(process.execPath, [join(root, 'tests/run.ts'), ...selected], {
    cwd: root,
    env: { ...process.env, SERVICE_TEST_ENGINE: 'postgres', SERVICE_TEST_RUN_ID: runId },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let last = ''
  let buffered = ''
  child.stdout.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk)
    buffered += chunk.toString()
    const lines = buffered.split('\n')
    buffered = lines.pop() ?? ''
    for (const line of lines) if (/^\d+ passed, \d+ failed/.test(line)) last = line
  })
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? 1)))
  if (/^\d+ passed, \d+ failed/.test(buffered)) last = buffered
  process.env.SERVICE_TEST_RUN_ID = runId
  await dropRunDatabases(runPrefix()).catch((error) => console.log(`could not drop test databases: ${error}`))
  const match = /^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?/.exec(last)
  if (!match) {
    console.log(`PostgreSQL pass ended with code ${code} and no result line`)
    return { passed: 0, total: 1, skipped: 0 }
  }
  const [p, f, s] = [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)]
  console.log(`PostgreSQL pass: ${p} passed, ${f} failed`)
  return { passed: p, total: p + f, skipped: s }
}

/** `12 min 34.5 s`, or `4.2 s` under a minute. */
function formatDuration(ms: number): string {
  const seconds = ms / 1000
  if (seconds < 60) return `${seconds.toFixed(1)} s`
  return `${Math.floor(seconds / 60)} min ${(seconds % 60).toFixed(1)} s`
}
