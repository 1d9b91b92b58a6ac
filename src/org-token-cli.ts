/**
 * `service-server org token <control-plane-url>`: signs this machine's user in to an organization
 * with the device grant (client `service-cli`) and prints only the access token on stdout, so it
 * can be captured (`TOKEN=$(service-server org token https://cp.example)`); the verification URL,
 * the code and progress go to stderr.
 * @module
 */
import { parseArgs } from 'node:util'
import { deviceLogin, DeviceLoginError } from './core/device-login.ts'
import type { Env } from './core/settings.ts'

/** Process hooks (tests pass their own). */
export interface OrgTokenIo {
  env: Env
  stdout(line: string): void
  stderr(line: string): void
  fetch?: typeof fetch
  sleep?: (ms: number) => Promise<void>
}

/** The usage line. */
export const ORG_TOKEN_USAGE = 'service-server org token <control-plane-url>'

/** Runs `org token`; returns the exit code (0 signed in, 1 refused or failed, 2 usage). */
export async function runOrgTokenCli(argv: string[], io: OrgTokenIo): Promise<number> {
  let positionals: string[]
  let help = false
  try {
    const parsed = parseArgs({
      args: argv.slice(2),
      options: { help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    })
    positionals = parsed.positionals
    help = parsed.values.help === true
  } catch (error) {
    io.stderr(`service-server: ${(error as Error).message}; usage: ${ORG_TOKEN_USAGE}`)
    return 2
  }
  if (help) {
    io.stdout(
      [
        `Usage: ${ORG_TOKEN_USAGE}`,
        '',
        'Signs you in to the organization on that control plane: open the URL it prints, confirm the code',
        'and approve. Prints only the access token on stdout (a long-lived delivery:read token, listed and',
        'revocable under OAuth tokens in the console); everything else goes to stderr.',
      ].join('\n'),
    )
    return 0
  }
  const [url, ...rest] = positionals
  if (!url || rest.length > 0) {
    io.stderr(`service-server: org token needs exactly one control-plane URL; usage: ${ORG_TOKEN_USAGE}`)
    return 2
  }
  let baseUrl: URL
  try {
    baseUrl = new URL(url)
    if (baseUrl.protocol !== 'https:' && baseUrl.protocol !== 'http:') throw new Error('not http')
  } catch {
    io.stderr(`service-server: the control-plane URL must be an http(s) URL; usage: ${ORG_TOKEN_USAGE}`)
    return 2
  }
  try {
    const tokens = await deviceLogin({
      baseUrl: baseUrl.href,
      clientId: 'service-cli',
      fetch: io.fetch,
      sleep: io.sleep,
      onCode: (prompt) => {
        io.stderr('To sign in, open this page in a browser where you are signed in to your organization:')
        io.stderr(`  ${prompt.verificationUriComplete}`)
        io.stderr(`and confirm the code ${prompt.userCode} (also accepted at ${prompt.verificationUri}).`)
        io.stderr(`Waiting for approval (the code expires in ${Math.round(prompt.expiresIn / 60)} minutes)...`)
      },
    })
    io.stderr(`Signed in to ${tokens.organization?.name ?? 'the organization'}.`)
    io.stdout(tokens.access_token)
    return 0
  } catch (error) {
    if (!(error instanceof DeviceLoginError)) throw error
    io.stderr(`service-server: ${error.message}`)
    return 1
  }
}
