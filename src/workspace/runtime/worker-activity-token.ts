/**
 * The activity token a hosted Worker presents to its control plane: `SERVICE_WORKER_ACTIVITY_TOKEN`
 * (the `process` provisioner), or the content of the file `SERVICE_WORKER_ACTIVITY_TOKEN_FILE`
 * names (the `container` provisioner, which keeps tokens out of the container's configuration).
 * @module
 */
import { readFileSync } from 'node:fs'

/** The token, or undefined when neither is set (or the file cannot be read). */
export function workerActivityToken(env: Record<string, string | undefined>): string | undefined {
  if (env.SERVICE_WORKER_ACTIVITY_TOKEN) return env.SERVICE_WORKER_ACTIVITY_TOKEN
  const file = env.SERVICE_WORKER_ACTIVITY_TOKEN_FILE
  if (!file) return undefined
  try {
    return readFileSync(file, 'utf8').trim() || undefined
  } catch {
    return undefined
  }
}
