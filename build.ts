/**
 * Builds the single executable: `bun build.ts` → `dist/service-server` for this platform;
 * `bun build.ts --all` cross-compiles every supported target.
 *
 * The binary must not read `.env` or `bunfig.toml` from whatever directory it is started in
 * (Bun's compiled default), and carries migrations and embedded data because they are imported
 * statically.
 *
 * `bun build.ts --record-order` refreshes the bytecode layout profiles in `bin/bytecode-order/`
 * (one start of each mode, recorded by the binary itself) and then builds with them.
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

/** Release targets: our name → Bun's compile target. */
export const TARGETS: Record<string, string> = {
  'linux-x64': 'bun-linux-x64',
  'linux-arm64': 'bun-linux-arm64',
  'darwin-x64': 'bun-darwin-x64',
  'darwin-arm64': 'bun-darwin-arm64',
  'windows-x64': 'bun-windows-x64',
}

// Profile-guided bytecode layout: the functions a start actually runs are placed together at the
// front of the embedded bytecode, so a start pages in (and keeps resident) less of the binary.
// Measured on 2026-11-23: exec → first 200 about 5 ms sooner (26 → 21 ms) and about 1.8 MB less
// idle RSS. The profiles are committed because only a running binary can record them (a cross-
// compiled one cannot run here). One recorded from an older build still applies; functions it
// does not name are laid out after those it does. The most common start (workspace) comes first.
const ORDER_DIR = 'bin/bytecode-order'

// Start-up runs a burst of run-once code (module bodies, about 1,300 schema constructions, route
// tables) that JavaScriptCore would otherwise tier up into baseline and optimizing JIT code, paging
// in its compilers and keeping the code resident. The executable starts with the tier-up
// thresholds scaled by this factor and `serve.ts` puts them back (`startupFinished`) once the
// listener is bound, so requests get the normal JIT. Measured 2026-11-26 (workspace mode, start,
// 20 × /health, 1 s idle, bench/cases/idle-rss.ts): 45.9 → 41.5 MB idle, exec → first 200 25.6 →
// 19 ms; a factor of 10 saved 0.7 MB less, 1,000 no more than 100.
const START_JIT_POLICY = 100
const MODES = ['workspace', 'control-plane'] as const
const orderFile = (mode: string, root = '.') => join(root, ORDER_DIR, `${mode}.txt`)

/**
 * The `bun build` arguments that compile `entry` the way the product is compiled. Exported so the
 * bench's module-floor reference is built with exactly these flags and profiles.
 */
export function compileArgs(
  entry: string,
  outfile: string,
  options: { root?: string; target?: string; withOrder?: boolean; stamp?: BuildStamp } = {},
): string[] {
  const profiles =
    options.withOrder === false ? [] : MODES.map((mode) => orderFile(mode, options.root)).filter((f) => existsSync(f))
  return [
    // Bytecode halves start-up (modules are not re-parsed); it needs ESM output for top-level await.
    // Splitting keeps each mode's code in its own chunk, loaded only when that mode starts.
    'build',
    entry,
    '--compile',
    '--minify',
    '--sourcemap',
    '--bytecode',
    '--format=esm',
    '--splitting',
    '--no-compile-autoload-dotenv',
    '--no-compile-autoload-bunfig',
    '--outfile',
    outfile,
    ...(profiles.length ? ['--bytecode-order', profiles.join(',')] : []),
    ...(options.target ? ['--target', options.target] : []),
    '--compile-jit-policy',
    String(START_JIT_POLICY),
    // What `--version` prints besides the version (src/version.ts).
    ...(options.stamp
      ? [
          '--define',
          `SERVICE_BUILD_COMMIT=${JSON.stringify(options.stamp.commit)}`,
          '--define',
          `SERVICE_BUILD_DATE=${JSON.stringify(options.stamp.date)}`,
        ]
      : []),
  ]
}

/** The commit and time a build is made from, baked into the binary. */
export interface BuildStamp {
  commit: string
  date: string
}

/** The current commit (`unknown` outside a git checkout) and now, to the second, in UTC. */
export function buildStamp(root = '.'): BuildStamp {
  const git = spawnSync('git', ['-C', root, 'rev-parse', '--short=12', 'HEAD'], { encoding: 'utf8' })
  const commit = git.status === 0 ? git.stdout.trim() : 'unknown'
  // SOURCE_DATE_EPOCH (reproducible builds) wins over the clock when set.
  const epoch = Number(process.env.SOURCE_DATE_EPOCH)
  const date = new Date(Number.isFinite(epoch) && epoch > 0 ? epoch * 1000 : Date.now())
  return { commit, date: date.toISOString().replace(/\.\d{3}Z$/, 'Z') }
}

const outDir = 'dist'

/** Builds one executable; returns false (after printing why) when `exitOnFailure` is off and it failed. */
export function build(outfile: string, target?: string, withOrder = true, exitOnFailure = true): boolean {
  const args = compileArgs('bin/service-server.ts', outfile, { target, withOrder, stamp: buildStamp() })
  const started = performance.now()
  const result = spawnSync(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] })
  if (result.status !== 0) {
    console.error(`build failed for ${target ?? 'this platform'}`)
    if (exitOnFailure) process.exit(result.status ?? 1)
    return false
  }
  console.log(`built ${outfile}${target ? ` (${target})` : ''} in ${Math.round(performance.now() - started)} ms`)
  return true
}

/** Starts `binary` in `mode` with the order recorder on, makes a few typical requests, stops it. */
async function recordStart(binary: string, mode: (typeof MODES)[number]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'service-order-'))
  try {
    const out = join(dir, 'order.txt')
    const token = 'order-recording-token'
    let args: string[]
    if (mode === 'workspace') {
      mkdirSync(join(dir, 'ws/.opencode/skills/example'), { recursive: true })
      writeFileSync(
        join(dir, 'ws/.opencode/skills/example/SKILL.md'),
        '---\nname: example\ndescription: An example skill\n---\nBody\n',
      )
      writeFileSync(join(dir, 'ws/opencode.json'), '{"$schema":"https://opencode.ai/config.json"}\n')
      writeFileSync(
        join(dir, 'server.json'),
        JSON.stringify({
          workspaces: [{ path: join(dir, 'ws'), id: 'ws' }],
          token,
          hostToken: `${token}-host`,
          approval: { mode: 'auto' },
        }),
      )
      args = ['--mode', 'workspace', '--config', join(dir, 'server.json'), '--data-dir', join(dir, 'data')]
    } else {
      args = ['--mode', 'control-plane', '--data-dir', join(dir, 'data')]
    }
    const child = spawn(resolve(binary), [...args, '--port', '0', '--host', '127.0.0.1'], {
      cwd: dir,
      env: { ...process.env, BUN_BYTECODE_ORDER_OUT: out },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const exited = new Promise<number | null>((done, fail) => {
      child.on('exit', done)
      child.on('error', fail)
    })
    const base = await new Promise<string>((found, reject) => {
      let text = ''
      child.stdout!.on('data', (chunk: Buffer) => {
        text += chunk.toString()
        const match = /listening on (http:\/\/\S+)/.exec(text)
        if (match) found(match[1]!)
      })
      exited.then(() => reject(new Error(`${mode} start exited before listening`)), reject)
    })
    const paths =
      mode === 'workspace'
        ? ['/health', '/workspaces', '/workspace/ws/config', '/workspace/ws/skills', '/workspace/ws/commands']
        : ['/health']
    for (const path of paths) {
      const res = await fetch(base + path, { headers: { authorization: `Bearer ${token}` } })
      await res.arrayBuffer()
      if (res.status !== 200) throw new Error(`${mode} ${path} answered ${res.status} while recording`)
    }
    child.kill('SIGTERM')
    if ((await exited) !== 0) throw new Error(`${mode} did not stop cleanly while recording`)
    mkdirSync(ORDER_DIR, { recursive: true })
    // Copied, not renamed: the temp dir may be on another filesystem, and the recorder writes 0600.
    writeFileSync(orderFile(mode), readFileSync(out))
    console.log(`recorded ${orderFile(mode)}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  mkdirSync(outDir, { recursive: true })
  // Split chunks leave per-chunk source maps beside the binary under fresh hashed names on every
  // build; the executable embeds what it needs, so stale maps would only pile up.
  for (const name of readdirSync(outDir))
    if (name.endsWith('.js.map') || name === 'service-server.map') rmSync(`${outDir}/${name}`)
  if (process.argv.includes('--record-order')) {
    build(`${outDir}/service-server`, undefined, false)
    for (const mode of MODES) await recordStart(`${outDir}/service-server`, mode)
  }
  if (process.argv.includes('--all')) {
    for (const [name, target] of Object.entries(TARGETS))
      build(`${outDir}/service-server-${name}${name.startsWith('windows') ? '.exe' : ''}`, target)
  } else {
    build(`${outDir}/service-server`)
  }
}
