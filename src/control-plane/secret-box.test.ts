import { Buffer } from 'node:buffer'
import { chmodSync, statSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite, withTempDir } from '../../tests/harness.ts'
import { ConfigError } from '../core/settings.ts'
import {
  generateEncryptionKey,
  loadSecretBox,
  parseEncryptionKey,
  secretBoxFromKey,
  SecretBoxError,
  tightenKeyFile,
} from './secret-box.ts'

const test = suite('control-plane/secret-box')

const opens = (fn: () => string): string => {
  try {
    return fn()
  } catch (error) {
    return error instanceof SecretBoxError ? 'SecretBoxError' : `other: ${(error as Error).message}`
  }
}

test('a sealed value opens to the plaintext, never contains it, and differs every time', () => {
  const box = secretBoxFromKey(parseEncryptionKey(generateEncryptionKey())!)
  const secret = 'sk-live-0123456789abcdef'
  const a = box.seal(secret)
  const b = box.seal(secret)
  assert.not.equal(a, b, 'a fresh nonce per value')
  assert.not.ok(a.includes(secret))
  assert.ok(/^sb1\.[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+$/.test(a))
  assert.is(box.open(a), secret)
  assert.is(box.open(box.seal('')), '')
  assert.is(box.open(box.seal('ünïcødé ✓')), 'ünïcødé ✓')
})

test('a value bound to a context opens only with that context, and tampering is detected', () => {
  const box = secretBoxFromKey(parseEncryptionKey(generateEncryptionKey())!)
  const sealed = box.seal('key-for-row', 'llm_1')
  assert.is(box.open(sealed, 'llm_1'), 'key-for-row')
  assert.is(
    opens(() => box.open(sealed, 'llm_2')),
    'SecretBoxError',
  )
  assert.is(
    opens(() => box.open(sealed)),
    'SecretBoxError',
  )
  const parts = sealed.split('.')
  const flipped = parts[3]!.startsWith('A') ? `B${parts[3]!.slice(1)}` : `A${parts[3]!.slice(1)}`
  assert.is(
    opens(() => box.open([...parts.slice(0, 3), flipped, parts[4]].join('.'), 'llm_1')),
    'SecretBoxError',
  )
  assert.is(
    opens(() => box.open('plain text')),
    'SecretBoxError',
  )
})

test('another key refuses to open a value and names both key ids', () => {
  const one = secretBoxFromKey(parseEncryptionKey(generateEncryptionKey())!)
  const two = secretBoxFromKey(parseEncryptionKey(generateEncryptionKey())!)
  try {
    two.open(one.seal('x'))
    assert.unreachable('opened with the wrong key')
  } catch (error) {
    assert.instance(error, SecretBoxError)
    assert.ok((error as Error).message.includes(one.keyId) && (error as Error).message.includes(two.keyId))
  }
})

test('keys are read as hex, base64 or base64url and anything else is refused', () => {
  const hex = 'ab'.repeat(32)
  assert.is(parseEncryptionKey(hex)?.length, 32)
  assert.is(parseEncryptionKey(Buffer.alloc(32, 7).toString('base64'))?.length, 32)
  assert.is(parseEncryptionKey(` ${Buffer.alloc(32, 255).toString('base64url')}\n`)?.length, 32)
  assert.is(parseEncryptionKey('short'), null)
  assert.is(parseEncryptionKey(Buffer.alloc(16).toString('base64')), null)
  // The same key in two spellings gives the same box.
  const bytes = Buffer.alloc(32, 9)
  assert.is(
    secretBoxFromKey(parseEncryptionKey(bytes.toString('hex'))!).keyId,
    secretBoxFromKey(parseEncryptionKey(bytes.toString('base64'))!).keyId,
  )
})

test('without an env key a key file is generated with mode 0600, reused on the next start, and never replaced', async () => {
  await withTempDir(async (dir) => {
    const keyFile = join(dir, 'data', 'encryption.key')
    const first = await loadSecretBox({ keyFile })
    assert.is(first.source, 'generated')
    assert.is(statSync(keyFile).mode & 0o777, 0o600)
    const sealed = first.box.seal('persisted')
    const contents = readFileSync(keyFile, 'utf8')
    const second = await loadSecretBox({ keyFile })
    assert.is(second.source, 'file')
    assert.is(second.box.open(sealed), 'persisted')
    assert.is(readFileSync(keyFile, 'utf8'), contents)
    // Two starters racing on an empty directory end with one key.
    const raceFile = join(dir, 'race', 'encryption.key')
    const boxes = await Promise.all([
      loadSecretBox({ keyFile: raceFile }),
      loadSecretBox({ keyFile: raceFile }),
      loadSecretBox({ keyFile: raceFile }),
    ])
    assert.is(new Set(boxes.map((b) => b.box.keyId)).size, 1)
    assert.is(boxes.filter((b) => b.source === 'generated').length, 1)
  })
})

test('an env key wins over the file, a loose key file is tightened, and malformed keys stop start-up', async () => {
  await withTempDir(async (dir) => {
    const keyFile = join(dir, 'encryption.key')
    const envKey = 'cd'.repeat(32)
    const fromEnv = await loadSecretBox({ envKey, keyFile })
    assert.is(fromEnv.source, 'env')
    assert.is(fromEnv.box.keyId, secretBoxFromKey(parseEncryptionKey(envKey)!).keyId)
    writeFileSync(keyFile, `${'ef'.repeat(32)}\n`, { mode: 0o644 })
    const fromFile = await loadSecretBox({ keyFile })
    assert.is(fromFile.source, 'file')
    assert.is(statSync(keyFile).mode & 0o777, 0o600)
    await loadSecretBox({ envKey: 'not a key', keyFile }).then(
      () => assert.unreachable('accepted'),
      (e) => assert.ok(e instanceof ConfigError && /SERVICE_ENCRYPTION_KEY/.test(e.message)),
    )
    writeFileSync(keyFile, 'garbage')
    await loadSecretBox({ keyFile }).then(
      () => assert.unreachable('accepted'),
      (e) => assert.instance(e, ConfigError),
    )
  })
})

test('a loose key file that cannot be narrowed to 0600 stops start-up with the path and the reason', async () => {
  await withTempDir(async (dir) => {
    const keyFile = join(dir, 'encryption.key')
    writeFileSync(keyFile, `${'ef'.repeat(32)}\n`, { mode: 0o644 })
    const refused = async () => {
      throw Object.assign(new Error(`EPERM: operation not permitted, chmod '${keyFile}'`), { code: 'EPERM' })
    }
    const error = await tightenKeyFile(keyFile, refused).then(
      () => null,
      (e: unknown) => e,
    )
    assert.instance(error, ConfigError)
    assert.is((error as ConfigError).source, keyFile)
    assert.match((error as ConfigError).message, keyFile)
    assert.match((error as ConfigError).message, /mode 0644/)
    assert.match((error as ConfigError).message, /EPERM: operation not permitted/)
    // A file that is already private is left alone: chmod is not even tried.
    chmodSync(keyFile, 0o600)
    await tightenKeyFile(keyFile, refused)
    assert.is(statSync(keyFile).mode & 0o777, 0o600)
  })
})

test.run()
