/**
 * Encryption at rest for secrets the control plane must be able to read back (model-provider API
 * keys, connector credentials): AES-256-GCM with a fresh 96-bit nonce per value, so the database
 * file and its WAL never hold them in plaintext, and a sealed value copied to another row or
 * another deployment does not open there.
 *
 * The key is 32 bytes from `SERVICE_ENCRYPTION_KEY` (base64, base64url or hex), else from a key
 * file (default `<dataDir>/encryption.key`), generated with mode 0600 on first start. A generated
 * key is never overwritten: losing it makes every sealed secret unreadable, so creation is
 * "link if absent" and a concurrent starter adopts the key that won.
 *
 * Sealed text: `sb1.<keyId>.<nonce>.<ciphertext>.<tag>` (base64url parts). `keyId` is a short
 * digest of the key, so opening with the wrong key says so instead of failing as corrupt data.
 * An optional `context` (e.g. the owning row's id) is bound as associated data: the value opens
 * only with the same context.
 * @module
 */
import { Buffer } from 'node:buffer'
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import * as fsp from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { ConfigError } from '../core/settings.ts'
import { ensureDir, isNotFound, writeFileAtomic } from './fs.ts'

const VERSION = 'sb1'
const KEY_BYTES = 32
const NONCE_BYTES = 12

/** Seals and opens secrets with one key. */
export interface SecretBox {
  /** Short digest naming the key (not secret); stored in every sealed value. */
  readonly keyId: string
  /** Encrypts `plaintext`; the result is ASCII and safe to store in a text column. */
  seal(plaintext: string, context?: string): string
  /** Decrypts a value from {@link seal}; throws {@link SecretBoxError} if it does not open. */
  open(sealed: string, context?: string): string
}

/** A sealed value that cannot be opened: wrong key, wrong context, or damaged. */
export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SecretBoxError'
  }
}

/** Where the key came from, for the startup line (never the key itself). */
export type SecretKeySource = 'env' | 'file' | 'generated'

/** Parses a 32-byte key written as 64 hex digits or as base64/base64url; null if it is neither. */
export function parseEncryptionKey(text: string): Uint8Array | null {
  const trimmed = text.trim()
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return new Uint8Array(Buffer.from(trimmed, 'hex'))
  if (/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(trimmed)) {
    const bytes = Buffer.from(trimmed.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''), 'base64url')
    if (bytes.length === KEY_BYTES) return new Uint8Array(bytes)
  }
  return null
}

/** A new random key in the text form {@link parseEncryptionKey} reads. */
export function generateEncryptionKey(): string {
  return randomBytes(KEY_BYTES).toString('base64url')
}

/** A secret box over a raw 32-byte key. */
export function secretBoxFromKey(key: Uint8Array): SecretBox {
  if (key.length !== KEY_BYTES) throw new Error(`secret box key must be ${KEY_BYTES} bytes`)
  const keyBuffer = Buffer.from(key)
  const keyId = createHash('sha256').update('service-secret-box\0').update(keyBuffer).digest('base64url').slice(0, 8)
  const aad = (context: string | undefined) => Buffer.from(`${VERSION}\0${keyId}\0${context ?? ''}`, 'utf8')
  return {
    keyId,
    seal(plaintext, context) {
      const nonce = randomBytes(NONCE_BYTES)
      const cipher = createCipheriv('aes-256-gcm', keyBuffer, nonce)
      cipher.setAAD(aad(context))
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
      const tag = cipher.getAuthTag()
      return [VERSION, keyId, nonce.toString('base64url'), body.toString('base64url'), tag.toString('base64url')].join(
        '.',
      )
    },
    open(sealed, context) {
      const parts = sealed.split('.')
      if (parts.length !== 5 || parts[0] !== VERSION) throw new SecretBoxError('not a sealed value')
      if (parts[1] !== keyId)
        throw new SecretBoxError(`sealed with another encryption key (${parts[1]}); this server uses ${keyId}`)
      try {
        const decipher = createDecipheriv('aes-256-gcm', keyBuffer, Buffer.from(parts[2]!, 'base64url'))
        decipher.setAAD(aad(context))
        decipher.setAuthTag(Buffer.from(parts[4]!, 'base64url'))
        return Buffer.concat([decipher.update(Buffer.from(parts[3]!, 'base64url')), decipher.final()]).toString('utf8')
      } catch {
        throw new SecretBoxError('sealed value does not open: damaged or bound to another context')
      }
    },
  }
}

async function readKeyFile(path: string): Promise<Uint8Array | null> {
  let text: string
  try {
    text = await fsp.readFile(path, 'utf8')
  } catch (error) {
    if (isNotFound(error)) return null
    throw new ConfigError(path, '', `cannot read encryption key file: ${(error as Error).message}`)
  }
  const key = parseEncryptionKey(text)
  if (!key) throw new ConfigError(path, '', 'encryption key file must hold 32 bytes as base64 or 64 hex digits')
  await tightenKeyFile(path)
  return key
}

/**
 * Keys made by hand may be group- or world-readable; the file guards every stored secret, so it is
 * narrowed to 0600. When that fails (another owner, a read-only mount) start-up stops with a
 * ConfigError (exit 2) naming the path and the reason, rather than running with a readable key.
 * `chmod` is a parameter so a test can make it fail where the test runs as root.
 */
export async function tightenKeyFile(
  path: string,
  chmod: (path: string, mode: number) => Promise<void> = fsp.chmod,
): Promise<void> {
  const mode = (await fsp.stat(path)).mode & 0o777
  if ((mode & 0o077) === 0) return
  try {
    await chmod(path, 0o600)
  } catch (error) {
    throw new ConfigError(
      path,
      '',
      `encryption key file has mode ${mode.toString(8).padStart(4, '0')} (readable by others) and cannot be ` +
        `narrowed to 0600: ${(error as Error).message}; fix its owner or mode`,
    )
  }
}

/** Options for {@link loadSecretBox}. */
export interface SecretBoxOptions {
  /** `SERVICE_ENCRYPTION_KEY`, if set; takes precedence over the file. */
  envKey?: string
  /** Key file read (or generated) when no env key is given. */
  keyFile: string
}

/**
 * The server's secret box: the env key, else the key file, else a newly generated key file
 * (mode 0600). Throws ConfigError (exit 2) for a malformed key.
 */
export async function loadSecretBox(options: SecretBoxOptions): Promise<{ box: SecretBox; source: SecretKeySource }> {
  if (options.envKey !== undefined && options.envKey !== '') {
    const key = parseEncryptionKey(options.envKey)
    if (!key)
      throw new ConfigError(
        'SERVICE_ENCRYPTION_KEY',
        '',
        'must be 32 bytes as base64 or 64 hex digits (generate one with: openssl rand -base64 32)',
      )
    return { box: secretBoxFromKey(key), source: 'env' }
  }
  const existing = await readKeyFile(options.keyFile)
  if (existing) return { box: secretBoxFromKey(existing), source: 'file' }
  await ensureDir(dirname(options.keyFile), 0o700)
  const temp = join(dirname(options.keyFile), `.${basename(options.keyFile)}.${randomBytes(6).toString('hex')}.new`)
  await writeFileAtomic(temp, `${generateEncryptionKey()}\n`, { mode: 0o600 })
  let generated = true
  try {
    // link() fails when the target exists, so a key another process just made is never replaced.
    await fsp.link(temp, options.keyFile)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    generated = false
  } finally {
    await fsp.rm(temp, { force: true })
  }
  const key = await readKeyFile(options.keyFile)
  if (!key) throw new ConfigError(options.keyFile, '', 'encryption key file vanished while it was being created')
  return { box: secretBoxFromKey(key), source: generated ? 'generated' : 'file' }
}
