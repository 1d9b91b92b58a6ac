/** The product version, read from package.json at build time so the binary carries it. */
import pkg from '../package.json' with { type: 'json' }

/** Semantic version of this build. */
export const VERSION: string = pkg.version

// Baked in by build.ts (`--define`); undeclared when running from source.
declare const SERVICE_BUILD_COMMIT: string | undefined
declare const SERVICE_BUILD_DATE: string | undefined

/** What `--version` prints about a build. */
export interface BuildInfo {
  version: string
  /** The git commit the binary was built from (`unknown` outside a checkout). */
  commit: string
  /** When the binary was built (ISO 8601, UTC); from source, the commit's date. */
  date: string
}

/**
 * The version, commit and build date. A binary carries all three; from source they come from git
 * when it is available (loaded only here: `--version` is the only caller).
 */
export async function buildInfo(cwd: string): Promise<BuildInfo> {
  if (typeof SERVICE_BUILD_COMMIT === 'string' && typeof SERVICE_BUILD_DATE === 'string')
    return { version: VERSION, commit: SERVICE_BUILD_COMMIT, date: SERVICE_BUILD_DATE }
  const { spawnSync } = await import('node:child_process')
  const git = (args: string[]) => {
    try {
      const result = spawnSync('git', args, { cwd, encoding: 'utf8', timeout: 5000 })
      return result.status === 0 ? result.stdout.trim() : ''
    } catch {
      return ''
    }
  }
  const here = new URL('.', import.meta.url)
  const root = here.protocol === 'file:' ? decodeURIComponent(here.pathname) : cwd
  const commit = git(['-C', root, 'rev-parse', '--short=12', 'HEAD']) || 'unknown'
  const date =
    commit === 'unknown' ? 'unknown' : git(['-C', root, 'log', '-1', '--format=%cd', '--date=iso-strict-local'])
  return { version: VERSION, commit, date: date ? toUtc(date) : 'unknown' }
}

function toUtc(text: string): string {
  const time = Date.parse(text)
  return Number.isNaN(time) ? text : new Date(time).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** The `--version` line: `0.1.0 (commit 1a2b3c4d5e6f, built 2026-11-27T16:55:03Z)`. */
export function versionLine(info: BuildInfo): string {
  return `${info.version} (commit ${info.commit}, built ${info.date})`
}
