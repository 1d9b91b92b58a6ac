/**
 * Opens a snapshot of a target with the reader for its connector type.
 * @module
 */
import type { ConnectorSettings } from '../../jobs/async-settings.ts'
import { gitSnapshot } from './git-source.ts'
import { githubSnapshot } from './github-source.ts'
import type { SourceLocation, SourceSnapshot } from './source.ts'

/** A snapshot of `location` at its branch head. */
export function openSnapshot(
  location: SourceLocation,
  settings: ConnectorSettings,
  signal: AbortSignal,
): Promise<SourceSnapshot> {
  return location.connectorType === 'git'
    ? gitSnapshot(location, { command: settings.gitCommand, allowFileUrls: settings.allowFileUrls }, signal)
    : githubSnapshot(location, settings.githubApiUrl, signal)
}
