/**
 * Benchmark runner: `bun bench/run.ts [caseName...] [--rounds N] [--duration S]
 * [--connections C] [--starts N] [--warmup S] [--tool wrk|autocannon] [--pin]
 * [--mode workspace|control-plane] [--strict] [--list]`.
 *
 * Discovers cases in bench/cases/*.ts, runs the selected ones (all by
 * default) in file-name order, prints a table of median ratios against the
 * baselines measured in the same run, and writes bench/results/latest.json.
 * Exit code is 0 unless the harness itself failed, or `--strict` is given and
 * a target was missed.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { BenchCase, BenchContext, BenchSettings } from './lib/bench-case.ts'
import { installCleanupHandlers, onBenchExit } from './lib/child-registry.ts'
import type { Figure } from './lib/figure.ts'
import { compileHello, compileModuleFloor, compileWorkFloor } from './lib/hello-binary.ts'
import { detectLoadTool, type LoadTool } from './lib/load-driver.ts'
import { loadAverage1m, machineInfo } from './lib/machine-info.ts'
import { ensureProductBinary, productCommand, productEntry, type ProductMode } from './lib/product-server.ts'
import { printFigure, printTable } from './lib/results-printer.ts'
import { pinning } from './lib/cpu-pinning.ts'
import type { ServerCommand } from './lib/server-process.ts'

const benchDir = dirname(fileURLToPath(import.meta.url))
const repoRoot = resolve(benchDir, '..')

interface CaseReport {
  name: string
  status: 'ok' | 'error'
  error?: string
  seconds: number
  /** 1-minute load average when the case ended (includes the bench's own load). */
  loadAverage1mAfter: number | null
  skipped: Array<{ what: string; reason: string }>
}

function envNum(name: string, fallback: number): number {
  const v = process.env[name]
  return v !== undefined && v !== '' && Number.isFinite(Number(v)) ? Number(v) : fallback
}

function parseArgs(argv: string[]): { settings: BenchSettings; names: string[]; strict: boolean; list: boolean } {
  const settings: BenchSettings = {
    rounds: envNum('BENCH_ROUNDS', 5),
    durationSec: envNum('BENCH_DURATION', 2),
    connections: envNum('BENCH_CONNECTIONS', 50),
    warmupSec: envNum('BENCH_WARMUP', 1),
    starts: envNum('BENCH_STARTS', 10),
    tool: detectLoadTool(),
    mode: (process.env.BENCH_MODE as ProductMode) ?? 'workspace',
  }
  settings.durationSec = Math.max(1, Math.round(settings.durationSec))
  settings.warmupSec = Math.max(0, Math.round(settings.warmupSec))
  const names: string[] = []
  let strict = false
  let list = false
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const value = () => {
      const v = argv[++i]
      if (v === undefined) throw new Error(`${a} needs a value`)
      return v
    }
    const num = (allowZero = false) => {
      const v = Number(value())
      if (!Number.isFinite(v) || v < 0 || (v === 0 && !allowZero)) throw new Error(`${a} needs a positive number`)
      return v
    }
    switch (a) {
      case '--rounds':
        settings.rounds = Math.round(num())
        break
      case '--duration':
        settings.durationSec = Math.round(num())
        break
      case '--connections':
        settings.connections = Math.round(num())
        break
      case '--warmup':
        settings.warmupSec = Math.round(num(true))
        break
      case '--starts':
        settings.starts = Math.round(num())
        break
      case '--pin':
        // Read by lib/cpu-pinning.ts wherever a server or the load generator is started.
        process.env.BENCH_PIN = '1'
        break
      case '--tool': {
        const t = value()
        if (t !== 'wrk' && t !== 'autocannon') throw new Error('--tool must be wrk or autocannon')
        settings.tool = t as LoadTool
        break
      }
      case '--mode': {
        const m = value()
        if (m !== 'workspace' && m !== 'control-plane') throw new Error('--mode must be workspace or control-plane')
        settings.mode = m
        break
      }
      case '--strict':
        strict = true
        break
      case '--list':
        list = true
        break
      case '-h':
      case '--help':
        console.log(readUsage())
        process.exit(0)
        break
      default:
        if (a.startsWith('-')) throw new Error(`unknown option ${a}`)
        names.push(a)
    }
  }
  return { settings, names, strict, list }
}

function readUsage(): string {
  return `usage: bun bench/run.ts [caseName...] [--rounds N] [--duration S] [--connections C]
                        [--starts N] [--warmup S] [--tool wrk|autocannon] [--pin]
                        [--mode workspace|control-plane] [--strict] [--list]
env: BENCH_ROUNDS BENCH_DURATION BENCH_CONNECTIONS BENCH_WARMUP BENCH_STARTS BENCH_TOOL BENCH_MODE BENCH_PIN=1
     BENCH_NO_BUILD=1 BENCH_PRODUCT_ENTRY=path BENCH_PRODUCT_BINARY=path`
}

async function loadCases(): Promise<BenchCase[]> {
  const dir = join(benchDir, 'cases')
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .sort()
  const cases: BenchCase[] = []
  for (const file of files) {
    const mod = await import(pathToFileURL(join(dir, file)).href)
    const c: BenchCase | undefined = mod.default ?? mod.benchCase
    if (!c || typeof c.name !== 'string' || typeof c.run !== 'function') {
      throw new Error(`bench/cases/${file} must export { name, run(ctx) } as default or as benchCase`)
    }
    if (cases.some((x) => x.name === c.name)) throw new Error(`duplicate case name ${c.name} (bench/cases/${file})`)
    cases.push(c)
  }
  return cases
}

async function main(): Promise<number> {
  installCleanupHandlers()
  const { settings, names, strict, list } = parseArgs(process.argv.slice(2))
  const all = await loadCases()
  if (list) {
    for (const c of all) console.log(`${c.name.padEnd(20)} ${c.optional ? '(optional) ' : ''}${c.description ?? ''}`)
    return 0
  }
  const unknown = names.filter((n) => !all.some((c) => c.name === n))
  if (unknown.length > 0) {
    console.error(`unknown case(s): ${unknown.join(', ')}; available: ${all.map((c) => c.name).join(', ')}`)
    return 2
  }
  const selected = names.length > 0 ? all.filter((c) => names.includes(c.name)) : all.filter((c) => !c.optional)

  const runTmp = mkdtempSync(join(tmpdir(), 'service-server-bench-'))
  onBenchExit(() => rmSync(runTmp, { recursive: true, force: true }))

  const machine = machineInfo()
  const started = Date.now()
  console.log(
    `bench: ${selected.map((c) => c.name).join(', ')} | ${machine.cores} cores, ${machine.memTotalMb} MB, bun ${machine.bunVersion} | ` +
      `tool ${settings.tool}, ${settings.rounds} rounds × ${settings.durationSec} s, ${settings.connections} connections, ${settings.starts} starts${pinning() ? ', server on core 0, load on the others' : ''}`,
  )

  const busy = (load: number | null) => load !== null && load > machine.cores * 0.5
  if (busy(machine.loadAverage1m)) {
    console.log(
      `WARNING: load average ${machine.loadAverage1m} on ${machine.cores} cores before starting; other work on this machine will make ratios noisy`,
    )
  }

  const figures: Figure[] = []
  const reports: CaseReport[] = []
  let helloPromise: Promise<string> | undefined
  let floorPromise: Promise<string> | undefined
  let workFloorPromise: Promise<string> | undefined
  let productPromise: Promise<string | null> | undefined
  let current: CaseReport | undefined
  let logCounter = 0
  const stderrFile = (label: string) =>
    join(runTmp, `${String(++logCounter).padStart(3, '0')}-${label.replace(/[^a-z0-9]+/gi, '_')}.stderr.log`)

  const compiledOnce = async (
    what: string,
    compile: (root: string, dir: string) => Promise<string>,
    prefix: string,
  ) => {
    const t = Date.now()
    const p = await compile(repoRoot, mkdtempSync(join(runTmp, prefix)))
    ctx.log(`compiled ${what} in ${((Date.now() - t) / 1000).toFixed(1)} s`)
    return p
  }
  const referenceCommand = (label: string, binaryPath: string): ServerCommand => ({
    label: `${label}(binary)`,
    command: binaryPath,
    args: ['--port', '0', '--host', '127.0.0.1'],
    cwd: runTmp,
    stderrFile: stderrFile(label),
  })

  const ctx: BenchContext = {
    repoRoot,
    settings,
    tempDir: (prefix) => mkdtempSync(join(runTmp, `${prefix}-`)),
    log: (m) => console.log(`  ${m}`),
    helloBinary: () => (helloPromise ??= compiledOnce('bench/hello.ts', compileHello, 'hello-')),
    floorBinary: () => (floorPromise ??= compiledOnce('bench/module-floor.ts', compileModuleFloor, 'floor-')),
    workFloorBinary: () => (workFloorPromise ??= compiledOnce('bench/work-floor.ts', compileWorkFloor, 'work-floor-')),
    productBinary: () => {
      productPromise ??= (async () => {
        const status = await ensureProductBinary(repoRoot, ctx.log)
        if (status.path === null) {
          ctx.log(`product binary unavailable: ${status.reason}`)
          return null
        }
        return status.path
      })()
      return productPromise
    },
    hasProductSource: () => existsSync(productEntry(repoRoot)),
    baselineCommand: () => ({
      label: 'baseline',
      command: process.execPath,
      args: [join(benchDir, 'baseline-server.ts'), '--port', '0', '--host', '127.0.0.1'],
      cwd: runTmp,
      stderrFile: stderrFile('baseline'),
    }),
    helloCommand: (binaryPath) => referenceCommand('hello', binaryPath),
    floorCommand: (binaryPath) => referenceCommand('floor', binaryPath),
    productCommand: (variant, dir, binaryPath, mode) => {
      const cmd = productCommand(repoRoot, variant, dir, mode ?? settings.mode, binaryPath)
      return { ...cmd, stderrFile: stderrFile(cmd.label) }
    },
    record: (figure) => {
      figures.push(figure)
      printFigure(figure)
    },
    skip: (what, reason) => {
      current?.skipped.push({ what, reason })
      console.log(`  skipped ${what}: ${reason}`)
    },
  }

  for (const c of selected) {
    console.log(`\n== ${c.name}${c.description ? ` — ${c.description}` : ''}`)
    const t = Date.now()
    current = { name: c.name, status: 'ok', seconds: 0, loadAverage1mAfter: null, skipped: [] }
    reports.push(current)
    try {
      await c.run(ctx)
    } catch (err) {
      current.status = 'error'
      current.error = err instanceof Error ? err.message : String(err)
      console.error(`  ERROR in ${c.name}: ${current.error}`)
    }
    current.seconds = Math.round((Date.now() - t) / 100) / 10
    current.loadAverage1mAfter = loadAverage1m()
  }

  printTable(figures)
  const targeted = figures.filter((f) => f.pass !== undefined)
  const allPass = targeted.every((f) => f.pass) && reports.every((r) => r.status === 'ok')
  const result = {
    date: new Date().toISOString(),
    totalSeconds: Math.round((Date.now() - started) / 100) / 10,
    machine,
    settings: { ...settings, pinned: pinning() },
    cases: reports,
    figures,
    summary: {
      targets: targeted.length,
      passed: targeted.filter((f) => f.pass).length,
      failed: targeted.filter((f) => !f.pass).map((f) => `${f.caseName}: ${f.name}`),
      errors: reports.filter((r) => r.status === 'error').map((r) => r.name),
      pass: allPass,
    },
  }
  mkdirSync(join(benchDir, 'results'), { recursive: true })
  const out = join(benchDir, 'results', 'latest.json')
  writeFileSync(`${out}.tmp`, JSON.stringify(result, null, 2) + '\n')
  renameSync(`${out}.tmp`, out)
  console.log(
    `${result.summary.passed}/${result.summary.targets} targets met` +
      (result.summary.errors.length ? `, errors in: ${result.summary.errors.join(', ')}` : '') +
      ` | ${result.totalSeconds} s | wrote bench/results/latest.json`,
  )
  if (reports.some((r) => r.status === 'error')) return 1
  return strict && !allPass ? 1 : 0
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err)
    process.exit(2)
  },
)
