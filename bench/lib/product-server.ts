/**
 * How to launch the product (`service-server`) for a bench: from source under
 * bun, or as the compiled `dist/service-server`, with a throw-away workspace.
 *
 * Why: every case needs the same launch recipe (flags, temp config with the
 * bench tokens, auto approval) and the same "is the binary fresh, else build
 * it" logic; keeping it here means a flag change in the product is a one-line
 * change for all cases.
 */
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { runCommand } from './run-command.ts'
import type { ServerCommand } from './server-process.ts'

/** Tokens written into the bench config; cases use them for authenticated requests. */
export const BENCH_CLIENT_TOKEN = 'bench-client-token'
export const BENCH_HOST_TOKEN = 'bench-host-token'

/** Server mode to launch. */
export type ProductMode = 'workspace' | 'control-plane'

/** How the product is run. */
export type ProductVariant = 'source' | 'binary'

/** Path of the product entry point (BENCH_PRODUCT_ENTRY overrides, e.g. to try a branch's copy). */
export function productEntry(repoRoot: string): string {
  return resolve(repoRoot, process.env.BENCH_PRODUCT_ENTRY ?? join('bin', 'service-server.ts'))
}

/** Path of the product binary (BENCH_PRODUCT_BINARY overrides and disables building). */
export function productBinaryPath(repoRoot: string): string {
  return resolve(repoRoot, process.env.BENCH_PRODUCT_BINARY ?? join('dist', 'service-server'))
}

/**
 * Create `dir` with a workspace folder, a data dir and server.json, and return
 * the mode-specific CLI flags (port 0, loopback). Reusing the same dir across
 * starts measures a restart with existing data; a fresh dir measures first run.
 */
export function prepareProductDir(dir: string, mode: ProductMode): string[] {
  mkdirSync(dir, { recursive: true })
  if (mode === 'control-plane') {
    return ['--mode', 'control-plane', '--data-dir', dir, '--port', '0', '--host', '127.0.0.1']
  }
  const ws = join(dir, 'ws')
  const data = join(dir, 'data')
  mkdirSync(ws, { recursive: true })
  mkdirSync(data, { recursive: true })
  const config = join(dir, 'server.json')
  writeFileSync(
    config,
    JSON.stringify(
      {
        workspaces: [{ path: ws }],
        token: BENCH_CLIENT_TOKEN,
        hostToken: BENCH_HOST_TOKEN,
        approval: { mode: 'auto' },
      },
      null,
      2,
    ),
  )
  return ['--mode', 'workspace', '--config', config, '--data-dir', data, '--port', '0', '--host', '127.0.0.1']
}

/**
 * The command that starts the product. The source variant runs the bun that
 * runs the bench (`process.execPath`, the real binary, so the pid is the
 * server's and its RSS is measurable). cwd is the product dir so no stray
 * .env/bunfig from the repo is picked up.
 */
export function productCommand(
  repoRoot: string,
  variant: ProductVariant,
  dir: string,
  mode: ProductMode,
  binaryPath?: string,
): ServerCommand {
  const flags = prepareProductDir(dir, mode)
  const env = mode === 'control-plane' ? BENCH_RATE_LIMIT : undefined
  if (variant === 'source') {
    return { label: 'ours(source)', command: process.execPath, args: [productEntry(repoRoot), ...flags], cwd: dir, env }
  }
  return { label: 'ours(binary)', command: binaryPath ?? productBinaryPath(repoRoot), args: flags, cwd: dir, env }
}

/**
 * Benches load one credential with thousands of requests a second, past the default per-credential
 * limit: the limiter stays on (its cost is inside every control-plane figure) with a budget no
 * bench reaches. `rate-limit-cost` measures it against the limiter off.
 */
export const BENCH_RATE_LIMIT: Record<string, string> = {
  SERVICE_RATE_LIMIT_RATE: '1000000000',
  SERVICE_RATE_LIMIT_BURST: '1000000000',
}

/** Result of `ensureProductBinary`. */
export type BinaryStatus = { path: string; built: boolean } | { path: null; reason: string }

/**
 * Return `dist/service-server` if it is newer than every file under src/,
 * bin/ and build.ts; otherwise run `npm run build` (when build.ts exists).
 * Set BENCH_NO_BUILD=1 to use an existing binary as is.
 */
export async function ensureProductBinary(repoRoot: string, log: (msg: string) => void): Promise<BinaryStatus> {
  const bin = productBinaryPath(repoRoot)
  const haveBin = existsSync(bin)
  if (process.env.BENCH_PRODUCT_BINARY) {
    return haveBin ? { path: bin, built: false } : { path: null, reason: `BENCH_PRODUCT_BINARY=${bin} does not exist` }
  }
  if (haveBin && process.env.BENCH_NO_BUILD === '1') return { path: bin, built: false }
  if (haveBin) {
    const binTime = statSync(bin).mtimeMs
    const newest = newestMtime([
      join(repoRoot, 'src'),
      join(repoRoot, 'bin'),
      join(repoRoot, 'build.ts'),
      join(repoRoot, 'package.json'),
    ])
    if (newest <= binTime) return { path: bin, built: false }
    log('dist/service-server is older than the sources; rebuilding with npm run build')
  }
  if (!existsSync(join(repoRoot, 'build.ts'))) {
    return haveBin ? { path: bin, built: false } : { path: null, reason: 'no dist/service-server and no build.ts' }
  }
  const started = Date.now()
  const res = await runCommand('npm', ['run', 'build'], { cwd: repoRoot, timeoutMs: 300_000 })
  if (res.code !== 0 || !existsSync(bin)) {
    const why = `npm run build failed (code ${res.code}): ${(res.stderr || res.stdout).trim().split('\n').slice(-8).join('\n')}`
    if (!haveBin) return { path: null, reason: why }
    log(`${why}; using the existing, stale binary`)
    return { path: bin, built: false }
  }
  log(`built dist/service-server in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  return { path: bin, built: true }
}

function newestMtime(paths: string[]): number {
  let newest = 0
  const visit = (p: string) => {
    let st
    try {
      st = statSync(p)
    } catch {
      return
    }
    if (st.isDirectory()) {
      for (const name of readdirSync(p)) visit(join(p, name))
    } else if (st.mtimeMs > newest) {
      newest = st.mtimeMs
    }
  }
  for (const p of paths) visit(p)
  return newest
}
