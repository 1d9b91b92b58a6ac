/**
 * Finds credentials in what an export would carry, so a workspace is never shared with its
 * secrets unless the caller decided so. Two signals: a key that names a credential (apiKey,
 * token, secret, password, authorization, …) holding a literal, and a value shaped like a known
 * credential (Bearer headers, GitHub/OpenAI/AWS/Google/Slack tokens, JWTs, private keys). Values
 * that only reference the environment or a file (`{env:NAME}`, `{file:…}`, `${NAME}`) are not
 * secrets and stay.
 * @module
 */

const SECRET_KEY =
  /(api[-_]?key|apikey|token|secret|passw(or)?d|passwd|credential|private[-_]?key|authorization|bearer|client[-_]?secret|access[-_]?key|session[-_]?key|cookie)/i
const SECRET_VALUES = [
  /\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/i,
  /\b(ghp|gho|ghs|ghu|ghr|github_pat)_[A-Za-z0-9_]{16,}/,
  /\bsk-[A-Za-z0-9_-]{16,}/,
  /\bAKIA[0-9A-Z]{16}\b/,
  /\bAIza[0-9A-Za-z_-]{30,}/,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
  /\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@]+:[^\s/@]+@/i,
]
/** A credential-named assignment with a literal value in source text: `apiKey = "…"`, `TOKEN: '…'`. */
const ASSIGNMENT =
  /(api[-_]?key|apikey|token|secret|passw(or)?d|client[-_]?secret|access[-_]?key|private[-_]?key)["']?\s*[:=]\s*["'`][^"'`\s]{8,}["'`]/i
const REFERENCE = /^\s*(\{env:[^}]+\}|\{file:[^}]+\}|\$\{[^}]+\}|\$[A-Z_][A-Z0-9_]*)\s*$/

/** True when a string value looks like a credential by itself. */
export function looksSecret(value: string): boolean {
  return SECRET_VALUES.some((pattern) => pattern.test(value))
}

function leafIsSecret(key: string | null, value: unknown): boolean {
  if (typeof value !== 'string' || value.trim() === '' || REFERENCE.test(value)) return false
  return (key !== null && SECRET_KEY.test(key)) || looksSecret(value)
}

/** JSON paths (dot-joined) of secret-looking leaves in a config value. */
export function findSecrets(value: unknown, path: string[] = [], key: string | null = null): string[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => findSecrets(item, [...path, String(i)], key))
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => findSecrets(v, [...path, k], k))
  return leafIsSecret(key, value) ? [path.join('.')] : []
}

/** A copy of `value` without its secret-looking leaves (array items are dropped, object keys removed). */
export function stripSecrets<T>(value: T, key: string | null = null): T | undefined {
  if (Array.isArray(value))
    return value.map((item) => stripSecrets(item, key)).filter((item) => item !== undefined) as T
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) {
      const kept = stripSecrets(v, k)
      if (kept !== undefined) out[k] = kept
    }
    return out as T
  }
  return leafIsSecret(key, value) ? undefined : value
}

/** True when source text carries a literal credential. */
export function textHasSecret(text: string): boolean {
  return looksSecret(text) || ASSIGNMENT.test(text)
}
