/**
 * A member's delivered set as stock OpenCode configuration (what `GET /v1/me/opencode-config`
 * answers, merged by OpenCode as global config on every start), and the configuration that
 * delivers nothing but tells the person why, for a token that no longer works: OpenCode refuses
 * to start when the remote config does not answer 2xx, so a revoked token must not lock the
 * person out of OpenCode.
 *
 * - `mcp` entries, `agent.<name>` and `command.<name>` come from the items' payloads;
 * - context objects become `instructions` URLs under the capability path (OpenCode fetches
 *   http(s) instructions; files would have to exist on the person's machine);
 * - skills are listed by `skills.urls: [<capability URL>]`, served by `capability-routes.ts`.
 * @module
 */
import type { DeliverySet } from './delivered-set.ts'

/** Why a request got the configuration that delivers nothing. */
export type SignedOutReason = 'signed_out' | 'no_access' | 'throttled'

/** The JSON `GET /v1/me/opencode-config` answers. */
export type OpencodeRemoteConfig = Record<string, unknown>

function fields(payload: Record<string, unknown>, omit: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(payload).filter(([k, v]) => !omit.includes(k) && v !== undefined))
}

/**
 * The configuration for a set: `capabilityUrl` is the base of the member's skills (ends in `/`).
 * `payloads` gives the normalized payload of each command and agent, by object id.
 */
export function opencodeConfigOf(
  set: DeliverySet,
  capabilityUrl: string,
  payloads: ReadonlyMap<string, Record<string, unknown>>,
): OpencodeRemoteConfig {
  const mcp: Record<string, unknown> = {}
  const agent: Record<string, unknown> = {}
  const command: Record<string, unknown> = {}
  const instructions: string[] = []
  let skills = 0
  for (const item of set.items) {
    const payload = payloads.get(item.objectId) ?? {}
    switch (item.type) {
      case 'mcp':
        Object.assign(mcp, (item.config as { mcp?: Record<string, unknown> } | undefined)?.mcp ?? {})
        break
      case 'agent':
        agent[item.name] = fields(payload, ['name'])
        break
      case 'command':
        command[item.name] = fields(payload, ['name'])
        break
      case 'context':
        instructions.push(`${capabilityUrl}_context/${encodeURIComponent(item.name)}.md`)
        break
      case 'skill':
        skills++
        break
      default:
        // Tools and hooks are code OpenCode loads from files; a linked workspace installs them.
        break
    }
  }
  const config: OpencodeRemoteConfig = {}
  if (Object.keys(mcp).length) config.mcp = mcp
  if (Object.keys(agent).length) config.agent = agent
  if (Object.keys(command).length) config.command = command
  if (instructions.length) config.instructions = instructions
  if (skills) config.skills = { urls: [capabilityUrl] }
  return config
}

/** The configuration that delivers nothing, with one instruction saying why and what to do. */
export function signedOutConfig(noticeUrl: string): OpencodeRemoteConfig {
  return { instructions: [noticeUrl] }
}

/** The notice a signed-out OpenCode reads as an instruction (also shown to the model). */
export function signedOutNotice(serverUrl: string, reason: SignedOutReason): string {
  const why =
    reason === 'throttled'
      ? 'Too many requests with unknown credentials came from this address in the last minute, so this one was not checked.'
      : reason === 'no_access'
        ? 'The account OpenCode signed in with is no longer a member of the organization, or may not read what it delivers.'
        : 'The organization token OpenCode stored is unknown, revoked or expired, so no organization configuration was delivered.'
  return [
    '# Organization configuration not delivered',
    '',
    `${why} OpenCode still works with your own configuration.`,
    '',
    'Tell the person using OpenCode, once, when it is relevant:',
    '',
    `- to receive the organization's skills, commands and MCP servers again, sign in: \`opencode auth login ${serverUrl}\``,
    `- to stop using this organization on this machine: \`opencode auth logout ${serverUrl}\``,
    '',
  ].join('\n')
}
