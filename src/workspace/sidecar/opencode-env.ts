/**
 * How tests and benches run the real OpenCode server (`opencode-ai`, a devDependency): the binary
 * path and an environment that keeps it inside a temp directory and off the network.
 *
 * OpenCode writes config, data, state and caches under HOME/XDG dirs and, unless told otherwise,
 * installs its plugin package with npm and fetches model lists at start; all of that is redirected
 * or disabled here, so a run never touches the real home and needs only loopback.
 * @module
 */
import { mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'

/** The `opencode` binary installed by npm. */
export const OPENCODE_BIN = resolve(
  import.meta.dirname ?? new URL('.', import.meta.url).pathname,
  '../../../node_modules/.bin/opencode',
)

/** Environment for an isolated, offline `opencode serve` whose home is `home`. */
export function isolatedOpencodeEnv(home: string): Record<string, string> {
  const dirs = {
    config: join(home, '.config'),
    data: join(home, '.local', 'share'),
    state: join(home, '.local', 'state'),
    cache: join(home, '.cache'),
  }
  for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true })
  return {
    HOME: home,
    XDG_CONFIG_HOME: dirs.config,
    XDG_DATA_HOME: dirs.data,
    XDG_STATE_HOME: dirs.state,
    XDG_CACHE_HOME: dirs.cache,
    OPENCODE_PURE: '1',
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
    OPENCODE_DISABLE_SHARE: '1',
    OPENCODE_DISABLE_CLAUDE_CODE: '1',
    OPENCODE_DISABLE_EXTERNAL_SKILLS: '1',
    OPENCODE_DISABLE_EMBEDDED_WEB_UI: '1',
    // Any npm install it still attempts fails at once instead of reaching a registry.
    npm_config_registry: 'http://127.0.0.1:9/',
    npm_config_offline: 'true',
  }
}
