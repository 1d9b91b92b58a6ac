/**
 * The `--help` text. Without `--mode` it is an overview; with `--mode` it lists that mode's flags,
 * environment variables and config-file keys, so a newcomer does not read the other mode's settings
 * as if they applied. It names variables and defaults only, never a value from the environment
 * (a database URL can carry a password).
 * @module
 */
import { FLAGS, type FlagScope, type FlagSpec, type Mode } from './cli-flags.ts'

/** One setting as the help lists it: config-file key, environment variable, meaning with its default. */
type Setting = [key: string, env: string, meaning: string]

const WORKSPACE_SETTINGS: Setting[] = [
  ['host', 'SERVICE_HOST', 'bind address (default 127.0.0.1)'],
  ['port', 'SERVICE_PORT', 'port; 0 picks a free one (default 8787)'],
  ['token', 'SERVICE_TOKEN', 'client token, 16+ characters (default generated into credentials.json)'],
  ['hostToken', 'SERVICE_HOST_TOKEN', 'host token, sent as X-Service-Host-Token (default generated likewise)'],
  ['approval.mode', 'SERVICE_APPROVAL_MODE', 'manual|auto; auto applies writes without asking (default manual)'],
  [
    'approval.timeoutMs',
    'SERVICE_APPROVAL_TIMEOUT_MS',
    'how long a write waits for the host, 1000-3600000 (default 30000)',
  ],
  ['workspaces[] {path,id?,name?}', 'SERVICE_WORKSPACES', 'list split on , or ; (default the current directory)'],
  ['corsOrigins[]', 'SERVICE_CORS_ORIGINS', 'exact origins or * (default none)'],
  ['readOnly', 'SERVICE_READ_ONLY', 'refuse every write with 403 read_only (default false)'],
  ['dataDir', 'SERVICE_DATA_DIR', 'state directory (default $XDG_DATA_HOME/service)'],
  ['logFormat', 'SERVICE_LOG_FORMAT', 'pretty|json (default pretty)'],
  ['logRequests', 'SERVICE_LOG_REQUESTS', 'one log line per request (default false)'],
  ['inbox.{enabled,maxBytes}', 'SERVICE_INBOX_ENABLED, _MAX_BYTES', 'inbox uploads (default true, 250000000)'],
  ['outbox.enabled', 'SERVICE_OUTBOX_ENABLED', 'artifact downloads (default true)'],
  ['sidecar.baseUrl', 'SERVICE_SIDECAR_URL', 'the OpenCode-style server behind /sidecar/* (default none)'],
  ['sidecar.bin', 'SERVICE_SIDECAR_BIN', 'run a managed `opencode serve` (default none)'],
]

const CONTROL_PLANE_SETTINGS: Setting[] = [
  ['host', 'SERVICE_HOST', 'bind address (default 127.0.0.1)'],
  ['port', 'SERVICE_PORT', 'port; 0 picks a free one (default 8790)'],
  ['dataDir', 'SERVICE_DATA_DIR', 'state directory (default $XDG_DATA_HOME/service)'],
  ['database', 'SERVICE_DATABASE', 'SQLite file (default <dataDir>/control-plane.sqlite)'],
  ['databaseUrl', 'SERVICE_DATABASE_URL', 'postgres:// URL: PostgreSQL instead of SQLite (default none)'],
  ['databasePool.size', 'SERVICE_DATABASE_POOL_SIZE', 'PostgreSQL connections per instance (default 10)'],
  [
    'databasePool.statementTimeoutMs',
    'SERVICE_DATABASE_STATEMENT_TIMEOUT_MS',
    'longer statements are cancelled (default 15000)',
  ],
  ['corsOrigins[]', 'SERVICE_CORS_ORIGINS', 'exact origins or * (default none)'],
  ['logFormat', 'SERVICE_LOG_FORMAT', 'pretty|json (default pretty)'],
  ['logRequests', 'SERVICE_LOG_REQUESTS', 'one log line per request (default false)'],
  ['openSignUp', 'SERVICE_OPEN_SIGN_UP', 'sign-up without an invitation after the first account (default false)'],
  ['sessionTtlHours', 'SERVICE_SESSION_TTL_HOURS', 'session lifetime (default 168)'],
  [
    'idempotencyKeyTtlHours',
    'SERVICE_IDEMPOTENCY_KEY_TTL_HOURS',
    'how long Idempotency-Key answers are kept (default 24)',
  ],
  ['auditRetentionDays', 'SERVICE_AUDIT_RETENTION_DAYS', 'days audit events are kept (default 365)'],
  ['trustProxy', 'SERVICE_TRUST_PROXY', 'client address from X-Forwarded-For (default false)'],
  ['rateLimit.enabled', 'SERVICE_RATE_LIMIT', 'per-credential request rate limits (default true)'],
  ['rateLimit.ratePerSecond', 'SERVICE_RATE_LIMIT_RATE', 'requests per second per credential (default 100)'],
  ['rateLimit.burst', 'SERVICE_RATE_LIMIT_BURST', 'requests at once per credential (default 1000)'],
  ['encryptionKeyFile', 'SERVICE_ENCRYPTION_KEY_FILE', 'key sealing stored secrets (default <dataDir>/encryption.key)'],
  ['', 'SERVICE_ENCRYPTION_KEY', 'the key itself, 32 bytes as base64 or hex (instead of the file)'],
  ['llmProviderCatalogFile', 'SERVICE_LLM_PROVIDER_CATALOG', 'replaces the embedded model-provider catalog'],
  [
    'workers.publicUrl',
    'SERVICE_CONTROL_PLANE_PUBLIC_URL',
    'URL Worker runtimes report to (default the listening URL)',
  ],
  [
    'workers.container.engine',
    'SERVICE_WORKERS_CONTAINER_ENGINE',
    'Docker Engine API (unix:///run/podman/podman.sock, tcp://h:2376): offers the container provisioner',
  ],
  [
    'workers.container.image',
    'SERVICE_WORKERS_CONTAINER_IMAGE',
    'image of Worker containers, from npm run image (default localhost/service-server:latest)',
  ],
  [
    'workers.container.{network,memoryMb,cpus,pidsLimit,tls}',
    '',
    'host (default) or slirp4netns:allow_host_loopback=true; 1024; 1; 512; {ca,cert,key} files',
  ],
]

/** Read by the listener before either mode loads its settings, so environment only. */
const CONNECTION_LIMITS: Setting[] = [
  ['', 'SERVICE_BODY_IDLE_TIMEOUT', 'seconds a request body may stall before 408 (default 15)'],
  ['', 'SERVICE_IDLE_TIMEOUT', 'seconds an idle keep-alive connection stays open (default 10)'],
  ['', 'SERVICE_MAX_REQUESTS_PER_ADDRESS', 'requests in progress per client address before 503 (default 64)'],
  ['', 'SERVICE_MAX_REQUESTS', 'requests in progress in total before 503 (default 1024)'],
]

/** `GET /metrics`, the same in both modes (docs/metrics.md). */
const METRICS_SETTINGS: Setting[] = [
  ['metrics.enabled', 'SERVICE_METRICS', 'serve GET /metrics in the Prometheus text format (default off)'],
  ['metrics.token', 'SERVICE_METRICS_TOKEN', 'scrapes must send it as a bearer token (16+ characters)'],
  ['metrics.listen', 'SERVICE_METRICS_LISTEN', 'host:port: serve /metrics there only, not on the main listener'],
]

const USAGE = [
  '  service-server [--mode workspace|control-plane] [options]',
  '  service-server approvals list|allow <id>|deny <id> [--url <base>] [--host-token <t>]',
  '  service-server tokens list|create <scope> [--label <l>] [--ttl <seconds>]|revoke <id> [--url <base>]',
  '  service-server org link <control-plane-url> [--workspace <id>] | org status|sync|unlink [--remove]',
  '  service-server control-plane copy-database --from <sqlite file> [--to <postgres url>]',
  '  service-server backup [--mode workspace|control-plane] [--data-dir <dir>] --to <file>',
  '  service-server restore [--mode workspace|control-plane] --from <file> --data-dir <dir>',
  '  service-server org token <control-plane-url>   sign in to an organization; prints only the token',
]

function flagLine(name: string, f: FlagSpec): string {
  return `  ${`--${name}${f.value ? ` <${f.value}>` : ''}`.padEnd(34)}${f.help}`
}

function flagSection(scope: FlagScope): string[] {
  return Object.entries(FLAGS)
    .filter(([, f]) => f.scope === scope)
    .map(([name, f]) => flagLine(name, f))
}

// Two lines per setting keep the text within 110 columns, the width of a typical terminal.
function settingLines(settings: Setting[]): string[] {
  return settings.flatMap(([key, env, meaning]) => [
    `  ${(key || '-').padEnd(32)} ${env}`,
    `${' '.repeat(35)}${meaning}`,
  ])
}

function overview(version: string): string[] {
  return [
    `service-server ${version}`,
    '',
    'One server, two HTTP surfaces; --mode chooses one:',
    '  workspace       (default) a private API in front of workspace directories on this machine',
    '  control-plane   an organization: identity, members, config objects, connectors, Workers',
    '',
    'Usage:',
    ...USAGE,
    "  service-server --mode workspace --help       that mode's flags, environment variables and config keys",
    '  service-server --mode control-plane --help   the same for control-plane mode',
    '',
    'Options (both modes):',
    ...flagSection('common'),
    '',
    'Every setting resolves per key: flag > environment variable > config file > default.',
    'Workspace mode reads $XDG_CONFIG_HOME/service/server.json (XDG_CONFIG_HOME defaults to ~/.config)',
    'unless --config or SERVICE_SERVER_CONFIG names another file; control-plane mode reads a file only',
    'when --config or SERVICE_CONTROL_PLANE_CONFIG names one.',
  ]
}

function modeHelp(version: string, mode: Mode): string[] {
  const workspace = mode === 'workspace'
  return [
    `service-server ${version}: ${mode} mode`,
    '',
    'Usage:',
    `  service-server --mode ${mode} [options]`,
    '',
    'Options:',
    ...flagSection('common'),
    ...flagSection(mode),
    '',
    'Config file:',
    ...(workspace
      ? [
          '  --config <path>, else $SERVICE_SERVER_CONFIG, else $XDG_CONFIG_HOME/service/server.json',
          '  (XDG_CONFIG_HOME defaults to ~/.config). A missing default file means no settings; a --config',
          '  path that does not exist stops start-up with exit 2. Generated tokens are kept in',
          '  credentials.json beside the config file (mode 0600).',
        ]
      : [
          '  --config <path>, else $SERVICE_CONTROL_PLANE_CONFIG, else none (defaults and environment only).',
          '  A named file that does not exist stops start-up with exit 2.',
          '  The database URL may carry a password: prefer SERVICE_DATABASE_URL to the flag (flags show in',
          '  process lists); the password never appears in logs, errors or this help.',
        ]),
    '  Relative paths inside the file resolve against its directory. XDG_DATA_HOME (default',
    '  ~/.local/share) places the default data directory.',
    '',
    'Settings, flag > environment variable > config file > default:',
    `  ${'config-file key'.padEnd(32)} environment variable`,
    `${' '.repeat(35)}meaning (default)`,
    ...settingLines(workspace ? WORKSPACE_SETTINGS : CONTROL_PLANE_SETTINGS),
    ...settingLines(METRICS_SETTINGS),
    '',
    'Connection limits, environment only (read before the config file):',
    ...settingLines(CONNECTION_LIMITS),
    '',
    workspace
      ? 'More keys (authThrottle.*, events.*, files.*, sidecar.*) are listed in docs/configuration.md.'
      : 'More keys (signInThrottle.*, jobs.*, workers.*, connectors.*) are listed in docs/configuration.md.',
  ]
}

/** The `--help` text: an overview, or one mode's flags and settings when `mode` is given. */
export function helpText(version: string, mode?: Mode): string {
  return (mode ? modeHelp(version, mode) : overview(version)).join('\n')
}
