/**
 * The contract between `bench/run.ts` and `bench/cases/*.ts`.
 *
 * Why: the runner discovers cases by file, so adding a benchmark for a new
 * issue is "add one file exporting `{ name, run(ctx) }`". Everything a case
 * needs (settings, temp dirs, the compiled hello-world, the product binary,
 * launch recipes, a place to record figures) comes through the context, so
 * cases never duplicate set-up or cleanup.
 */
import type { Figure } from './figure.ts'
import type { LoadTool } from './load-driver.ts'
import type { ProductMode, ProductVariant } from './product-server.ts'
import type { ServerCommand } from './server-process.ts'

/** Tunables shared by all cases (CLI flags / BENCH_* env vars override defaults). */
export interface BenchSettings {
  /** Alternating rounds for throughput and memory figures. */
  rounds: number
  /** Seconds of load per measurement. */
  durationSec: number
  /** Concurrent connections for load. */
  connections: number
  /** Seconds of unmeasured load per server before the first round (JIT warm-up). */
  warmupSec: number
  /** Measured starts per subject in start-time cases. */
  starts: number
  /** Load generator in use. */
  tool: LoadTool
  /** Product mode launched by cases that do not choose one themselves. */
  mode: ProductMode
}

/** What a case receives. */
export interface BenchContext {
  repoRoot: string
  settings: BenchSettings
  /** Make a fresh temp directory that is removed when the bench ends. */
  tempDir(prefix: string): string
  /** Progress output (indented under the case header). */
  log(message: string): void
  /** Path of the compiled hello-world binary (compiled once per run, lazily). */
  helloBinary(): Promise<string>
  /** Path of the compiled module floor (bench/module-floor.ts, product build flags; compiled once per run, lazily). */
  floorBinary(): Promise<string>
  /** Path of the compiled work floor (bench/work-floor.ts, product build flags, takes the product's workspace flags; compiled once per run, lazily). */
  workFloorBinary(): Promise<string>
  /** Path of a fresh dist/service-server, building it if needed; null (with the reason logged) if unavailable. */
  productBinary(): Promise<string | null>
  /** Whether bin/service-server.ts exists. */
  hasProductSource(): boolean
  /** Command for the Bun.serve baseline (`bench/baseline-server.ts` under bun). */
  baselineCommand(): ServerCommand
  /** Command for the compiled hello-world; pass its path from `helloBinary()`. */
  helloCommand(binaryPath: string): ServerCommand
  /** Command for the compiled module floor; pass its path from `floorBinary()`. */
  floorCommand(binaryPath: string): ServerCommand
  /**
   * Command for the product. `dir` is its workspace/data dir (created and
   * configured; reuse it across starts to measure restarts). `mode` defaults
   * to settings.mode.
   */
  productCommand(variant: ProductVariant, dir: string, binaryPath?: string, mode?: ProductMode): ServerCommand
  /** Add a summarised figure to the report (also printed immediately). */
  record(figure: Figure): void
  /** Note that part of a case was skipped and why (kept in latest.json). */
  skip(what: string, reason: string): void
}

/** A registered benchmark case: one file in bench/cases/ exporting it as default or as `benchCase`. */
export interface BenchCase {
  /** Unique name used on the command line: `bun bench/run.ts <name>`. */
  name: string
  /** One line on what it measures and its target. */
  description?: string
  /** Only run when named on the command line (diagnostics, slow or experimental cases). */
  optional?: boolean
  run(ctx: BenchContext): Promise<void>
}

/** Identity helper that type-checks a case definition. */
export function defineCase(c: BenchCase): BenchCase {
  return c
}
