/**
 * What domain modules need from the composition root, passed explicitly so tests can swap the
 * clock and cheapen password hashing without touching module state.
 * @module
 */
import type { Kysely } from 'kysely'
import type { Notifier } from '../storage/notifier.ts'
import type { SkillLimits } from '../opencode/skill-bundle.ts'
import type { ZipLimits } from '../opencode/skill-zip.ts'
import type { ControlPlaneDb } from './schema.ts'
import type { SecretBox } from './secret-box.ts'

/** scrypt cost parameters (see identity/passwords.ts). */
export interface ScryptParams {
  N: number
  r: number
  p: number
}

/** Settings the domain reads; resolved from {@link ControlPlaneConfig}. */
export interface DomainSettings {
  openSignUp: boolean
  sessionTtlMs: number
  invitationTtlMs: number
  scrypt: ScryptParams
  /** Skill folder and zip upload limits (config file key `skills`); defaults when absent. */
  skills?: Partial<SkillLimits & ZipLimits>
  /** Lifetime of the built-in OAuth clients' tokens in days (config file key `oauth.tokenTtlDays`; default 90). */
  oauthTokenTtlDays?: number
  /** Device-grant polling interval in seconds (config `oauth.deviceIntervalSeconds`; default 5). */
  oauthDeviceIntervalSeconds?: number
}

/** Dependencies of every domain function. */
export interface Deps {
  db: Kysely<ControlPlaneDb>
  /** Current time in epoch milliseconds; tests move it. */
  now: () => number
  settings: DomainSettings
  /** Encrypts secrets stored for reading back (provider keys, connector credentials). */
  secrets: SecretBox
  /** Wakes change-feed subscribers on every instance; absent in tools that only read or copy. */
  notifier?: Notifier
}

/** ISO text of `deps.now()` plus an offset, the stored timestamp format. */
export function isoAt(deps: Pick<Deps, 'now'>, offsetMs = 0): string {
  return new Date(deps.now() + offsetMs).toISOString()
}
