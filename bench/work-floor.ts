/**
 * Work floor for the workspace server's idle memory: the start-up work `--mode workspace` does,
 * written directly on Bun with no layer of ours (no kysely, valibot, router or services).
 *
 * Why: the module floor shows what loading our code costs; this shows what the work itself costs
 * the runtime, so the idle figure splits into the runtime doing that work, and our layers on top.
 * It takes the product's flags and does what a restart of the product does: read the config file,
 * resolve the workspaces, hash the configured tokens, open the state database (WAL, one
 * connection, the three tables, the migration check, the tokens and the last event), compare
 * the tracked files with the persisted snapshot, watch the workspace, then serve `/health` with the
 * product's body and headers and give memory back once quiet, as `src/serve.ts` does. It is
 * compiled with the product's build flags (bench/lib/hello-binary.ts), JIT start policy included.
 *
 * Usage: work-floor --config <server.json> --data-dir <dir> [--port 0] [--host 127.0.0.1]
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, watch, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const bun = (globalThis as any).Bun

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback
}

const sha256 = (data: string | Uint8Array): string => new bun.CryptoHasher('sha256').update(data).digest('hex')

const config = JSON.parse(readFileSync(flag('config', 'server.json'), 'utf8')) as {
  workspaces?: Array<{ path: string }>
  token?: string
  hostToken?: string
}
const tokenHashes = [config.token, config.hostToken].filter((t): t is string => !!t).map(sha256)
const workspaces = (config.workspaces ?? [{ path: process.cwd() }]).map((w) => {
  const path = realpathSync(w.path)
  return { id: `ws_${sha256(path).slice(0, 12)}`, path }
})

const dataDir = flag('data-dir', 'data')
mkdirSync(dataDir, { recursive: true, mode: 0o700 })
const file = join(dataDir, 'work-floor.sqlite')
const { Database } = await import('bun:sqlite' as string)
const db = new Database(file, { create: true, strict: true })
for (const pragma of ['journal_mode = wal', 'synchronous = normal', 'foreign_keys = on', 'busy_timeout = 5000'])
  db.run(`pragma ${pragma}`)
db.run('create table if not exists migrations (name text primary key)')
db.run('create table if not exists tokens (id text primary key, hash text not null, scope text not null)')
db.run(
  'create table if not exists events (seq integer primary key, id text, workspace_id text, type text, payload text, created_at text)',
)
db.run(
  'create table if not exists audit (seq integer primary key, id text, workspace_id text, actor text, action text, target text, summary text, created_at text)',
)
const migrations = db.prepare('select name from migrations order by name').all()
const tokens = db.prepare('select id, hash, scope from tokens').all()
const lastEvent = db.prepare('select max(seq) as seq from events').get()

// The change tracker's start: hash every tracked file, compare with the snapshot kept on disk.
const listed = (dir: string): string[] => {
  try {
    return readdirSync(dir).sort()
  } catch {
    return []
  }
}
const watchers: unknown[] = []
let changed = 0
for (const ws of workspaces) {
  const tracked = [
    'opencode.jsonc',
    'opencode.json',
    '.opencode/service.json',
    ...listed(join(ws.path, '.opencode/skills')).map((s) => `.opencode/skills/${s}/SKILL.md`),
    ...listed(join(ws.path, '.opencode/commands')).map((c) => `.opencode/commands/${c}`),
    ...listed(join(ws.path, '.opencode/plugins')).map((p) => `.opencode/plugins/${p}`),
  ]
  const snapshot: Record<string, string> = {}
  for (const rel of tracked) {
    try {
      snapshot[rel] = sha256(readFileSync(join(ws.path, rel)))
    } catch {
      // absent
    }
  }
  const snapshotFile = join(dataDir, 'workspace-snapshots', `${ws.id}.json`)
  const before = existsSync(snapshotFile) ? JSON.parse(readFileSync(snapshotFile, 'utf8')).files : null
  if (!before) {
    mkdirSync(join(dataDir, 'workspace-snapshots'), { recursive: true, mode: 0o700 })
    writeFileSync(snapshotFile, JSON.stringify({ version: 1, files: snapshot }), { mode: 0o600 })
  } else {
    for (const rel of new Set([...Object.keys(before), ...Object.keys(snapshot)]))
      if (before[rel] !== snapshot[rel]) changed++
  }
  const skillDirs = listed(join(ws.path, '.opencode/skills')).map((s) => `.opencode/skills/${s}`)
  for (const rel of ['', '.opencode', '.opencode/skills', '.opencode/commands', '.opencode/plugins', ...skillDirs]) {
    try {
      watchers.push(watch(join(ws.path, rel), { persistent: false }, () => changed++))
    } catch {
      // not there
    }
  }
}

// Memory back once quiet, as src/serve.ts does.
let requests = 0
let seen = 0
let timer: ReturnType<typeof setTimeout> | undefined
const check = () => {
  if (requests !== seen) {
    seen = requests
    timer = setTimeout(check, 500)
    return
  }
  timer = undefined
  bun.shrink()
  setTimeout(() => bun.shrink(), 100)
}
const active = () => {
  requests++
  if (!timer) {
    seen = requests
    timer = setTimeout(check, 500)
  }
}
active()

const started = performance.now()
let counter = 101_559_956_668_416
const SAFE_ID = /^[\w.:-]{1,128}$/
const headers = (request: Request) => {
  const client = request.headers.get('x-request-id')
  return {
    'content-type': 'application/json; charset=utf-8',
    'x-request-id': client && SAFE_ID.test(client) ? client : `req_0000000000000000${(++counter).toString(36)}`,
    'x-content-type-options': 'nosniff',
  }
}
const server = bun.serve({
  hostname: flag('host', '127.0.0.1'),
  port: Number(flag('port', '0')),
  routes: {
    '/health': {
      GET: (request: Request) => {
        active()
        const body = {
          ok: true,
          version: '0.0.0',
          mode: 'workspace',
          uptimeMs: Math.round(performance.now() - started),
        }
        return new Response(JSON.stringify(body), { headers: headers(request) })
      },
    },
  },
  fetch: (request: Request) => {
    active()
    return new Response('{"code":"not_found","message":"Not found"}', { status: 404, headers: headers(request) })
  },
})
bun.unsafe?.setJITPolicy?.(1)

console.log(`service-server work-floor workspace listening on http://${server.hostname}:${server.port}`)
process.on('SIGTERM', () => process.exit(0))
// Kept reachable, as the product keeps its stores and watchers.
;(globalThis as { workFloor?: unknown }).workFloor = {
  tokenHashes,
  migrations,
  tokens,
  lastEvent,
  watchers,
  db,
  changed,
}
