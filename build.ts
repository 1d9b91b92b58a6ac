/**
 * Builds the single executable: `bun build.ts` → `dist/service-server` for this platform;
 * `bun build.ts --all` cross-compiles every supported target.
 *
 * The binary must not read `.env` or `bunfig.toml` from whatever directory it is started in
 * (Bun's compiled default), and carries migrations and embedded data because they are imported
 * statically.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, readdirSync, rmSync } from 'node:fs'

const TARGETS: Record<string, string> = {
  'linux-x64': 'bun-linux-x64',
  'linux-arm64': 'bun-linux-arm64',
  'darwin-x64': 'bun-darwin-x64',
  'darwin-arm64': 'bun-darwin-arm64',
  'windows-x64': 'bun-windows-x64',
}

const all = process.argv.includes('--all')
const outDir = 'dist'
mkdirSync(outDir, { recursive: true })
// Split chunks leave per-chunk source maps beside the binary under fresh hashed names on every
// build; the executable embeds what it needs, so stale maps would only pile up.
for (const name of readdirSync(outDir)) if (name.endsWith('.js.map') || name === 'service-server.map') rmSync(`${outDir}/${name}`)

function build(outfile: string, target?: string): void {
  const args = [
    // Bytecode halves start-up (modules are not re-parsed); it needs ESM output for top-level await.
    // Splitting keeps each mode's code in its own chunk, loaded only when that mode starts.
    'build', 'bin/service-server.ts', '--compile', '--minify', '--sourcemap', '--bytecode', '--format=esm', '--splitting',
    '--no-compile-autoload-dotenv', '--no-compile-autoload-bunfig',
    '--outfile', outfile,
    ...(target ? ['--target', target] : []),
  ]
  const started = performance.now()
  const result = spawnSync(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] })
  if (result.status !== 0) {
    console.error(`build failed for ${target ?? 'this platform'}`)
    process.exit(result.status ?? 1)
  }
  console.log(`built ${outfile}${target ? ` (${target})` : ''} in ${Math.round(performance.now() - started)} ms`)
}

if (all) {
  for (const [name, target] of Object.entries(TARGETS)) build(`${outDir}/service-server-${name}${name.startsWith('windows') ? '.exe' : ''}`, target)
} else {
  build(`${outDir}/service-server`)
}
