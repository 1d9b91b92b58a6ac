/**
 * Compile `bench/hello.ts` into a standalone Bun executable in a temp dir.
 *
 * Why: start-time and idle-memory targets compare the product's compiled
 * binary with the smallest possible compiled Bun server, so the ~100 MB
 * embedded runtime (page-in cost, base RSS) is on both sides of the ratio and
 * only what the product adds on top is measured. It is rebuilt every run so it
 * always uses the same Bun as the product build.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { compileArgs } from '../../build.ts'
import { runCommand } from './run-command.ts'

/** Compile hello.ts to `<outDir>/hello` with the bun running the bench; returns the binary path. */
export async function compileHello(repoRoot: string, outDir: string): Promise<string> {
  const outfile = join(outDir, 'hello')
  const res = await runCommand(
    process.execPath,
    ['build', join(repoRoot, 'bench', 'hello.ts'), '--compile', '--no-compile-autoload-dotenv', '--outfile', outfile],
    { cwd: repoRoot, timeoutMs: 120_000 },
  )
  if (res.code !== 0 || !existsSync(outfile)) {
    throw new Error(`compiling bench/hello.ts failed (code ${res.code}):\n${res.stdout}\n${res.stderr}`)
  }
  return outfile
}

/**
 * Compile `bench/<name>.ts` exactly as build.ts compiles the product (same flags, same bytecode
 * profiles, same JIT start policy) to `<outDir>/<name>`; returns its path.
 */
async function compileLikeProduct(repoRoot: string, outDir: string, name: string): Promise<string> {
  const outfile = join(outDir, name)
  const res = await runCommand(
    process.execPath,
    compileArgs(join(repoRoot, 'bench', `${name}.ts`), outfile, { root: repoRoot }),
    { cwd: repoRoot, timeoutMs: 120_000 },
  )
  if (res.code !== 0 || !existsSync(outfile)) {
    throw new Error(`compiling bench/${name}.ts failed (code ${res.code}):\n${res.stdout}\n${res.stderr}`)
  }
  return outfile
}

/** `bench/module-floor.ts` built like the product: our workspace module graph, nothing started. */
export const compileModuleFloor = (repoRoot: string, outDir: string): Promise<string> =>
  compileLikeProduct(repoRoot, outDir, 'module-floor')

/** `bench/work-floor.ts` built like the product: the workspace start-up work, directly on Bun. */
export const compileWorkFloor = (repoRoot: string, outDir: string): Promise<string> =>
  compileLikeProduct(repoRoot, outDir, 'work-floor')
