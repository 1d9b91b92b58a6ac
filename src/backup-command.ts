/**
 * `service-server backup|restore` for either mode's state, and `service-server control-plane
 * backup|restore` (the same with `--mode control-plane`).
 *
 * Control plane on SQLite: the backup is the database file itself, copied online and consistent
 * as of one commit (`storage/sqlite-backup.ts`); on PostgreSQL the command refuses and points to
 * `pg_dump` (docs/deployment.md). Workspace server: a zip holding the state database (tokens,
 * events, audit) and the per-workspace snapshots the server compares at start. A restore goes into
 * an empty data directory only, after the file passed SQLite's integrity check and its migrations
 * were found to be ones this version knows; files are written 0600, directories 0700.
 *
 * The data directory is found as the server finds it: `--data-dir`, `SERVICE_DATA_DIR`, the config
 * file's `dataDir` (`--config`, else the mode's default file), else the default.
 * @module
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import * as v from 'valibot'
import type { Env } from './core/settings.ts'
import { ConfigError, defaultConfigDir, defaultDataDir, readConfigFile } from './core/settings.ts'
import { BackupRefusedError, backupSqliteFile, installFile, verifySqliteDatabase } from './storage/sqlite-backup.ts'

/** Process hooks (tests pass their own). */
export interface BackupIo {
  env: Env
  cwd: string
  stdout(line: string): void
  stderr(line: string): void
}

const USAGE = [
  'Usage: service-server backup  [--mode workspace|control-plane] [--data-dir <dir>] [--config <file>] --to <file>',
  '       service-server restore [--mode workspace|control-plane] --from <file> --data-dir <dir>',
  '       service-server control-plane backup|restore …   (the same with --mode control-plane)',
].join('\n')

const HELP = [
  USAGE,
  '',
  'backup copies the state of a server while it runs: the control plane’s SQLite database (as one',
  'consistent snapshot), or the workspace server’s state database and snapshots (a zip). The target',
  'file must not exist; it is written with mode 0600. The control plane’s encryption key is not in',
  'the backup: keep <data-dir>/encryption.key (or SERVICE_ENCRYPTION_KEY) with it.',
  'restore writes a backup into an empty data directory after checking its integrity and that its',
  'migrations are known to this version; start the server on that directory afterwards.',
  'On PostgreSQL use pg_dump and pg_restore (docs/deployment.md, "Backups").',
].join('\n')

const CONTROL_PLANE_FILE = 'control-plane.sqlite'
const WORKSPACE_FILE = 'workspace-state.sqlite'
const SNAPSHOT_DIR = 'workspace-snapshots'
/** Names a workspace snapshot may have inside a backup (allow-list: nothing else is extracted). */
const SNAPSHOT_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\.json$/
/** Upper bound for a workspace backup read into memory before extraction. */
const MAX_WORKSPACE_BACKUP_BYTES = 2 * 1024 * 1024 * 1024

type Mode = 'workspace' | 'control-plane'

const DataDirFile = v.looseObject({
  dataDir: v.optional(v.pipe(v.string(), v.minLength(1))),
  database: v.optional(v.pipe(v.string(), v.minLength(1))),
  databaseUrl: v.optional(v.string()),
})

/** Where the server of `mode` keeps its state, and its database URL when on PostgreSQL. */
function locate(
  mode: Mode,
  options: { dataDir?: string; config?: string; database?: string },
  io: BackupIo,
): { dataDir: string; database: string; databaseUrl?: string } {
  const explicit =
    options.config ?? (mode === 'workspace' ? io.env.SERVICE_SERVER_CONFIG : io.env.SERVICE_CONTROL_PLANE_CONFIG)
  const configPath =
    explicit !== undefined
      ? resolve(io.cwd, explicit)
      : mode === 'workspace'
        ? join(defaultConfigDir(io.env), 'server.json')
        : undefined
  const file = (configPath && readConfigFile(configPath, DataDirFile)) || {}
  if (options.config !== undefined && !existsSync(resolve(io.cwd, options.config)))
    throw new BackupRefusedError(`config file ${options.config} does not exist`)
  const fileDir = configPath ? dirname(configPath) : io.cwd
  const dataDir = resolve(
    io.cwd,
    options.dataDir ??
      (io.env.SERVICE_DATA_DIR || undefined) ??
      (file.dataDir ? resolve(fileDir, file.dataDir) : undefined) ??
      defaultDataDir(io.env),
  )
  const name = mode === 'workspace' ? WORKSPACE_FILE : CONTROL_PLANE_FILE
  const database =
    mode === 'control-plane'
      ? resolve(
          io.cwd,
          options.database ??
            (io.env.SERVICE_DATABASE || undefined) ??
            (file.database ? resolve(fileDir, file.database) : join(dataDir, name)),
        )
      : join(dataDir, name)
  const databaseUrl = mode === 'control-plane' ? io.env.SERVICE_DATABASE_URL || file.databaseUrl : undefined
  return { dataDir, database, ...(databaseUrl ? { databaseUrl } : {}) }
}

async function migrationNames(mode: Mode): Promise<string[]> {
  if (mode === 'control-plane') {
    const { controlPlaneMigrations } = await import('../migrations/control-plane/index.ts')
    return Object.keys(controlPlaneMigrations)
  }
  const { workspaceMigrations } = await import('../migrations/workspace/index.ts')
  return Object.keys(workspaceMigrations)
}

async function backup(mode: Mode, to: string, where: ReturnType<typeof locate>, io: BackupIo): Promise<void> {
  if (where.databaseUrl)
    throw new BackupRefusedError(
      'this control plane is on PostgreSQL: back it up with pg_dump --format=custom (docs/deployment.md, "Backups")',
    )
  const names = await migrationNames(mode)
  if (mode === 'control-plane') {
    await backupSqliteFile(where.database, to)
    const { migrations } = await verifySqliteDatabase(to, names, 'control-plane', { allowNewer: true })
    io.stdout(`backed up ${where.database} to ${to} (${migrations.length} migrations applied)`)
    io.stdout(
      'the encryption key is not in the backup: keep a copy of it (encryption.key in the data directory, or SERVICE_ENCRYPTION_KEY)',
    )
    return
  }
  // Workspace: the database through a temp copy, then the zip with the snapshots beside it.
  const { zipSync } = await import('fflate')
  const scratch = join(dirname(to), `.${Date.now().toString(36)}-${process.pid}.state`)
  try {
    await backupSqliteFile(where.database, scratch)
    const { migrations } = await verifySqliteDatabase(scratch, names, 'workspace state', { allowNewer: true })
    const entries: Record<string, Uint8Array> = { [WORKSPACE_FILE]: readFileSync(scratch) }
    const snapshots = join(where.dataDir, SNAPSHOT_DIR)
    let count = 0
    if (existsSync(snapshots)) {
      for (const name of readdirSync(snapshots)) {
        if (!SNAPSHOT_NAME.test(name) || !statSync(join(snapshots, name)).isFile()) continue
        entries[`${SNAPSHOT_DIR}/${name}`] = readFileSync(join(snapshots, name))
        count++
      }
    }
    if (existsSync(to)) throw new BackupRefusedError(`${to} already exists; choose a new file name`)
    installFile(to, (temp) => writeFileSync(temp, zipSync(entries, { level: 6 })))
    io.stdout(
      `backed up ${where.database} and ${count} workspace snapshots to ${to} (${migrations.length} migrations applied)`,
    )
  } finally {
    rmSync(scratch, { force: true })
  }
}

function requireEmptyDir(dir: string): void {
  if (!existsSync(dir)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    return
  }
  if (!statSync(dir).isDirectory()) throw new BackupRefusedError(`${dir} is not a directory`)
  if (readdirSync(dir).length > 0)
    throw new BackupRefusedError(`${dir} is not empty; restore into a new or empty data directory`)
  chmodSync(dir, 0o700)
}

async function restore(mode: Mode, from: string, dataDir: string, io: BackupIo): Promise<void> {
  if (!existsSync(from) || !statSync(from).isFile()) throw new BackupRefusedError(`no backup at ${from}`)
  const names = await migrationNames(mode)
  if (mode === 'control-plane') {
    const { migrations } = await verifySqliteDatabase(from, names, 'control-plane')
    requireEmptyDir(dataDir)
    const target = join(dataDir, CONTROL_PLANE_FILE)
    installFile(target, (temp) => writeFileSync(temp, readFileSync(from)))
    io.stdout(`restored ${from} into ${target} (${migrations.length} of ${names.length} migrations applied)`)
    io.stdout(
      'put the encryption key of the backed-up server in place before starting (encryption.key in the data directory, or SERVICE_ENCRYPTION_KEY)',
    )
    return
  }
  if (statSync(from).size > MAX_WORKSPACE_BACKUP_BYTES) throw new BackupRefusedError(`${from} is too large`)
  const { unzipSync } = await import('fflate')
  let entries: Record<string, Uint8Array>
  try {
    entries = unzipSync(readFileSync(from))
  } catch (error) {
    throw new BackupRefusedError(`${from} is not a workspace backup (zip): ${(error as Error).message}`)
  }
  const database = entries[WORKSPACE_FILE]
  if (!database) throw new BackupRefusedError(`${from} is not a workspace backup: no ${WORKSPACE_FILE} in it`)
  const snapshots: Array<[string, Uint8Array]> = []
  for (const [name, bytes] of Object.entries(entries)) {
    if (name === WORKSPACE_FILE || name === `${SNAPSHOT_DIR}/`) continue
    const inner = name.startsWith(`${SNAPSHOT_DIR}/`) ? name.slice(SNAPSHOT_DIR.length + 1) : ''
    if (!SNAPSHOT_NAME.test(inner))
      throw new BackupRefusedError(`${from} holds an unexpected entry: ${JSON.stringify(name)}`)
    snapshots.push([inner, bytes])
  }
  requireEmptyDir(dataDir)
  const target = join(dataDir, WORKSPACE_FILE)
  installFile(target, (temp) => writeFileSync(temp, database))
  let migrations: string[]
  try {
    ;({ migrations } = await verifySqliteDatabase(target, names, 'workspace state'))
  } catch (error) {
    rmSync(target, { force: true })
    throw error
  }
  if (snapshots.length > 0) mkdirSync(join(dataDir, SNAPSHOT_DIR), { mode: 0o700 })
  for (const [name, bytes] of snapshots)
    installFile(join(dataDir, SNAPSHOT_DIR, name), (temp) => writeFileSync(temp, bytes))
  io.stdout(
    `restored ${from} into ${dataDir} (${migrations.length} of ${names.length} migrations applied, ${snapshots.length} workspace snapshots)`,
  )
}

/**
 * Runs `backup` or `restore` (`argv[0]`); returns the exit code: 0 done, 2 refused or misused
 * (nothing written), 1 failed.
 */
export async function runBackupCli(argv: string[], io: BackupIo): Promise<number> {
  let values: {
    mode?: string
    to?: string
    from?: string
    'data-dir'?: string
    config?: string
    database?: string
    help?: boolean
  }
  let command: string | undefined
  try {
    const parsed = parseArgs({
      args: argv,
      options: {
        mode: { type: 'string' },
        to: { type: 'string' },
        from: { type: 'string' },
        'data-dir': { type: 'string' },
        config: { type: 'string' },
        database: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: true,
    })
    values = parsed.values
    command = parsed.positionals[0]
    if (parsed.positionals.length !== 1 || (command !== 'backup' && command !== 'restore')) {
      io.stderr(`service-server: expected backup or restore\n${USAGE}`)
      return 2
    }
  } catch (error) {
    const unknown = /Unknown option '([^']+)'/.exec((error as Error).message)?.[1]
    io.stderr(`service-server: ${unknown ? `unknown option ${unknown.split('=')[0]}` : 'invalid arguments'}\n${USAGE}`)
    return 2
  }
  if (values.help) {
    io.stdout(HELP)
    return 0
  }
  const mode = values.mode ?? 'workspace'
  if (mode !== 'workspace' && mode !== 'control-plane') {
    io.stderr(`service-server: --mode must be workspace or control-plane\n${USAGE}`)
    return 2
  }
  try {
    if (command === 'backup') {
      if (!values.to || values.from) {
        io.stderr(`service-server: backup needs --to <file> (and no --from)\n${USAGE}`)
        return 2
      }
      const where = locate(mode, { dataDir: values['data-dir'], config: values.config, database: values.database }, io)
      await backup(mode, resolve(io.cwd, values.to), where, io)
    } else {
      if (!values.from || !values['data-dir'] || values.to) {
        io.stderr(`service-server: restore needs --from <file> and --data-dir <dir>\n${USAGE}`)
        return 2
      }
      await restore(mode, resolve(io.cwd, values.from), resolve(io.cwd, values['data-dir']), io)
    }
    return 0
  } catch (error) {
    if (error instanceof BackupRefusedError || error instanceof ConfigError) {
      io.stderr(`service-server: ${command} refused: ${error.message}`)
      return 2
    }
    io.stderr(`service-server: ${command} failed: ${(error as Error).message}`)
    return 1
  }
}
