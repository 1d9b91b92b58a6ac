import { storedText } from '../testing/stored-text.ts'
import { assert, suite } from '../../../tests/harness.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'
import { buildFixtureOrg, signUpPerson } from '../testing/org-fixture.ts'
import type { ApiError } from '../../core/errors.ts'
import { signIn, signUp } from './accounts.ts'
import { DEFAULT_SCRYPT, hashPassword, verifyPassword } from './passwords.ts'
import { SignInThrottle } from './sign-in-throttle.ts'

const test = suite('control-plane/identity')

const HOUR = 3600_000

test('the first sign-up on an empty database is open; later ones need an invitation unless open sign-up is configured', async () => {
  const t = await startTestControlPlane({ openSignUp: false })
  try {
    const first = await t.client.post('/v1/auth/sign-up', {
      json: { email: 'First@Example.test ', password: 'correct horse', name: 'First' },
    })
    assert.is(first.status, 201)
    assert.is(first.body.user.email, 'first@example.test')
    assert.match(first.body.session.token, /^sst_/)
    const second = await t.client.post('/v1/auth/sign-up', {
      json: { email: 'second@example.test', password: 'correct horse', name: 'Second' },
    })
    assert.is(second.status, 403)
    assert.is(second.body.code, 'sign_up_not_allowed')
    assert.is(second.body.details.reason, 'invitation_required')
    const org = await t.client.post('/v1/orgs', { token: first.body.session.token, json: { name: 'Acme' } })
    const invite = await t.client.post('/v1/invitations', {
      token: first.body.session.token,
      json: { email: 'second@example.test', role: 'member' },
    })
    assert.is(invite.status, 201)
    const wrongEmail = await t.client.post('/v1/auth/sign-up', {
      json: {
        email: 'third@example.test',
        password: 'correct horse',
        name: 'Third',
        invitationToken: invite.body.token,
      },
    })
    assert.is(wrongEmail.status, 403)
    assert.is(wrongEmail.body.details.reason, 'email_mismatch')
    const invited = await t.client.post('/v1/auth/sign-up', {
      json: {
        email: 'second@example.test',
        password: 'correct horse',
        name: 'Second',
        invitationToken: invite.body.token,
      },
    })
    assert.is(invited.status, 201)
    const me = await t.client.get('/v1/me', { token: invited.body.session.token })
    assert.is(me.body.organization.id, org.body.item.id)
    assert.is(me.body.member.role, 'member')
    const reused = await t.client.post('/v1/auth/sign-up', {
      json: { email: 'fourth@example.test', password: 'correct horse', name: 'x', invitationToken: invite.body.token },
    })
    assert.is(reused.status, 403)
  } finally {
    await t.close()
  }
})

test('open sign-up lets anyone register, but an email can only be used once', async () => {
  const t = await startTestControlPlane({ openSignUp: true })
  try {
    await signUpPerson(t.client, 'a@x.test')
    const b = await t.client.post('/v1/auth/sign-up', {
      json: { email: 'b@x.test', password: 'long enough', name: 'B' },
    })
    assert.is(b.status, 201)
    const again = await t.client.post('/v1/auth/sign-up', {
      json: { email: 'B@X.test', password: 'long enough', name: 'B' },
    })
    assert.is(again.status, 409)
    assert.is(again.body.code, 'email_taken')
  } finally {
    await t.close()
  }
})

test('concurrent sign-ups for one email end as one 201 and one 409, never a 500', async () => {
  const t = await startTestControlPlane({ openSignUp: true })
  try {
    const body = { json: { email: 'race@x.test', password: 'long enough', name: 'Racer' } }
    const results = await Promise.all([
      t.client.post('/v1/auth/sign-up', body),
      t.client.post('/v1/auth/sign-up', body),
      t.client.post('/v1/auth/sign-up', body),
    ])
    assert.equal(results.map((r) => r.status).sort(), [201, 409, 409])
  } finally {
    await t.close()
  }
})

test('closed sign-up refuses an email with an account exactly like one without, before hashing the password', async () => {
  const t = await startTestControlPlane({ openSignUp: false })
  try {
    const ceo = await t.client.post('/v1/auth/sign-up', {
      json: { email: 'ceo@corp.test', password: 'correct horse', name: 'CEO' },
    })
    assert.is(ceo.status, 201)
    // Every password hash in sign-up reads the KDF parameters: count the reads.
    const settings = t.app.deps.settings
    const params = settings.scrypt
    let hashes = 0
    Object.defineProperty(settings, 'scrypt', {
      configurable: true,
      enumerable: true,
      get: () => {
        hashes++
        return params
      },
    })
    const attempt = (email: string, invitationToken?: string) =>
      t.client.post('/v1/auth/sign-up', { json: { email, password: 'whatever-1', name: 'X', invitationToken } })
    for (const token of [undefined, 'svi_not-a-real-token', 'bogus']) {
      const existing = await attempt('ceo@corp.test', token)
      const unknown = await attempt('nobody@corp.test', token)
      assert.is(existing.status, 403, `with token ${token}`)
      assert.is(existing.body.code, 'sign_up_not_allowed')
      assert.is(unknown.status, existing.status)
      assert.equal(unknown.body, existing.body)
      const headers = (r: typeof existing) =>
        Object.fromEntries([...r.headers].filter(([name]) => name !== 'x-request-id'))
      assert.equal(headers(unknown), headers(existing))
    }
    assert.is(hashes, 0, 'a refused sign-up never reaches the password hash')
    // Allowed to sign up with the email (a usable invitation for it): then, and only then, 409.
    await t.client.post('/v1/orgs', { token: ceo.body.session.token, json: { name: 'A' } })
    const forBob = await t.client.post('/v1/invitations', {
      token: ceo.body.session.token,
      json: { email: 'bob@corp.test', role: 'member' },
    })
    const bob = await attempt('bob@corp.test', forBob.body.token)
    assert.is(bob.status, 201)
    assert.is(hashes, 1, 'an allowed sign-up hashes once')
    await t.client.post('/v1/orgs', { token: bob.body.session.token, json: { name: 'B' } })
    const forCeo = await t.client.post('/v1/invitations', {
      token: bob.body.session.token,
      json: { email: 'ceo@corp.test', role: 'member' },
    })
    assert.is(forCeo.status, 201)
    const taken = await attempt('ceo@corp.test', forCeo.body.token)
    assert.is(taken.status, 409)
    assert.is(taken.body.code, 'email_taken')
    assert.is(hashes, 1, 'a taken email is refused before hashing too')
  } finally {
    await t.close()
  }
})

test('refused sign-ups count in the sign-in throttle per address and email; past the limit sign-up is 429', async () => {
  const t = await startTestControlPlane({ openSignUp: false })
  try {
    assert.is(
      (
        await t.client.post('/v1/auth/sign-up', {
          json: { email: 'ceo@corp.test', password: 'correct horse', name: 'CEO' },
        })
      ).status,
      201,
    )
    const throttle = new SignInThrottle(
      { maxFailuresPerAccount: 100, maxFailuresPerAddress: 3, windowMs: 60_000 },
      t.clock.now,
      t.app.deps.db,
    )
    const status = (email: string, address: string) =>
      signUp(t.app.deps, { email, password: 'whatever-1', name: 'X' }, { throttle, address }).then(
        () => 201,
        (error: ApiError) => error.status,
      )
    for (const email of ['a@corp.test', 'ceo@corp.test', 'b@corp.test'])
      assert.is(await status(email, '203.0.113.9'), 403)
    assert.is(await status('c@corp.test', '203.0.113.9'), 429)
    assert.is(await status('c@corp.test', '198.51.100.7'), 403, 'other addresses are not affected')
    // The same counters as sign-in: that address is throttled there too.
    const signInFromThere = await signIn(t.app.deps, throttle, {
      email: 'ceo@corp.test',
      password: 'correct horse',
      address: '203.0.113.9',
    }).then(
      () => 200,
      (error: ApiError) => error.status,
    )
    assert.is(signInFromThere, 429)
    t.clock.advance(60_000)
    assert.is(await status('c@corp.test', '203.0.113.9'), 403)
  } finally {
    await t.close()
  }
})

test('sign-up bodies are validated with field paths (422)', async () => {
  const t = await startTestControlPlane()
  try {
    const res = await t.client.post('/v1/auth/sign-up', {
      json: { email: 'not-an-email', password: 'short', name: '' },
    })
    assert.is(res.status, 422)
    assert.is(res.body.code, 'validation_failed')
    const paths = res.body.details.issues.map((i: { path: string }) => i.path).sort()
    assert.equal(paths, ['email', 'name', 'password'])
  } finally {
    await t.close()
  }
})

test('sign-in returns a new session; a wrong password or unknown email is the same 401', async () => {
  const t = await startTestControlPlane()
  try {
    const person = await signUpPerson(t.client, 'p@x.test')
    const ok = await t.client.post('/v1/auth/sign-in', { json: { email: 'P@x.test', password: person.password } })
    assert.is(ok.status, 200)
    assert.is(ok.body.user.id, person.userId)
    assert.is.not(ok.body.session.token, person.token)
    const wrong = await t.client.post('/v1/auth/sign-in', { json: { email: 'p@x.test', password: 'nope nope' } })
    const unknown = await t.client.post('/v1/auth/sign-in', { json: { email: 'nobody@x.test', password: 'nope nope' } })
    assert.is(wrong.status, 401)
    assert.is(unknown.status, 401)
    assert.equal(wrong.body, unknown.body)
  } finally {
    await t.close()
  }
})

test('sign-in is throttled per account with 429 and Retry-After, even for the right password, until the window passes', async () => {
  const t = await startTestControlPlane({ signInThrottle: { maxFailuresPerAccount: 3, windowSeconds: 600 } })
  try {
    const person = await signUpPerson(t.client, 'victim@x.test')
    for (let i = 0; i < 3; i++)
      assert.is(
        (await t.client.post('/v1/auth/sign-in', { json: { email: 'victim@x.test', password: `guess-${i}-xx` } }))
          .status,
        401,
      )
    const blocked = await t.client.post('/v1/auth/sign-in', {
      json: { email: 'victim@x.test', password: person.password },
    })
    assert.is(blocked.status, 429)
    assert.is(blocked.body.code, 'rate_limited')
    assert.is(blocked.headers.get('retry-after'), '600')
    t.clock.advance(400_000)
    const later = await t.client.post('/v1/auth/sign-in', {
      json: { email: 'victim@x.test', password: person.password },
    })
    assert.is(later.headers.get('retry-after'), '200')
    t.clock.advance(200_000)
    const open = await t.client.post('/v1/auth/sign-in', {
      json: { email: 'victim@x.test', password: person.password },
    })
    assert.is(open.status, 200)
  } finally {
    await t.close()
  }
})

test('failed sign-ins on two instances of one database add up in one window, and both instances answer 429', async () => {
  const first = await startTestControlPlane({ signInThrottle: { maxFailuresPerAccount: 4, windowSeconds: 600 } })
  const second = await startTestControlPlane({
    signInThrottle: { maxFailuresPerAccount: 4, windowSeconds: 600 },
    sameDatabaseAs: first,
    startAt: first.clock.now(),
  })
  try {
    const person = await signUpPerson(first.client, 'shared@x.test')
    const guess = (t: typeof first, i: number) =>
      t.client.post('/v1/auth/sign-in', { json: { email: 'shared@x.test', password: `guess-${i}-xx` } })
    // Two failures on each instance: neither alone reaches the limit of 4, together they do.
    const statuses = await Promise.all([guess(first, 0), guess(second, 1), guess(first, 2), guess(second, 3)])
    assert.equal(
      statuses.map((r) => r.status),
      [401, 401, 401, 401],
    )
    for (const t of [first, second]) {
      const blocked = await t.client.post('/v1/auth/sign-in', {
        json: { email: 'shared@x.test', password: person.password },
      })
      assert.is(blocked.status, 429)
      assert.is(blocked.headers.get('retry-after'), '600')
    }
  } finally {
    await second.close()
    await first.close()
  }
})

test('sign-in is throttled per client address across accounts when behind a trusted proxy', async () => {
  const t = await startTestControlPlane({
    trustProxy: true,
    signInThrottle: { maxFailuresPerAccount: 100, maxFailuresPerAddress: 4 },
  })
  try {
    const person = await signUpPerson(t.client, 'someone@x.test')
    const from = (ip: string) => ({ 'x-forwarded-for': `${ip}, 10.0.0.1` })
    for (let i = 0; i < 4; i++) {
      assert.is(
        (
          await t.client.post('/v1/auth/sign-in', {
            headers: from('203.0.113.9'),
            json: { email: `spray${i}@x.test`, password: 'password1' },
          })
        ).status,
        401,
      )
    }
    const blocked = await t.client.post('/v1/auth/sign-in', {
      headers: from('203.0.113.9'),
      json: { email: 'someone@x.test', password: person.password },
    })
    assert.is(blocked.status, 429)
    assert.ok(Number(blocked.headers.get('retry-after')) > 0)
    const elsewhere = await t.client.post('/v1/auth/sign-in', {
      headers: from('198.51.100.7'),
      json: { email: 'someone@x.test', password: person.password },
    })
    assert.is(elsewhere.status, 200)
  } finally {
    await t.close()
  }
})

test('the sign-up route counts refused attempts per client address and answers 429 past the limit', async () => {
  const t = await startTestControlPlane({
    openSignUp: false,
    trustProxy: true,
    signInThrottle: { maxFailuresPerAccount: 100, maxFailuresPerAddress: 3 },
  })
  try {
    await signUpPerson(t.client, 'first@x.test') // the first account of an installation is always allowed
    const from = { 'x-forwarded-for': '203.0.113.9, 10.0.0.1' }
    for (let i = 0; i < 3; i++) {
      const refused = await t.client.post('/v1/auth/sign-up', {
        headers: from,
        json: { email: `probe${i}@x.test`, password: 'password-123', name: 'P' },
      })
      assert.is(refused.status, 403)
    }
    const blocked = await t.client.post('/v1/auth/sign-up', {
      headers: from,
      json: { email: 'probe9@x.test', password: 'password-123', name: 'P' },
    })
    assert.is(blocked.status, 429)
    assert.ok(Number(blocked.headers.get('retry-after')) > 0)
    const elsewhere = await t.client.post('/v1/auth/sign-up', {
      headers: { 'x-forwarded-for': '198.51.100.7, 10.0.0.1' },
      json: { email: 'probe9@x.test', password: 'password-123', name: 'P' },
    })
    assert.is(elsewhere.status, 403)
  } finally {
    await t.close()
  }
})

test('sessions expire, slide forward while used, and end at sign-out', async () => {
  const t = await startTestControlPlane({ sessionTtlHours: 48 })
  try {
    const person = await signUpPerson(t.client, 's@x.test')
    const first = await t.client.get('/v1/me', { token: person.token })
    const initialExpiry = Date.parse(first.body.credential.expiresAt)
    t.clock.advance(25 * HOUR)
    const slid = await t.client.get('/v1/me', { token: person.token })
    assert.is(slid.status, 200)
    assert.ok(Date.parse(slid.body.credential.expiresAt) > initialExpiry, 'expiry moved forward')
    t.clock.advance(47 * HOUR)
    assert.is((await t.client.get('/v1/me', { token: person.token })).status, 200, 'still inside the slid lifetime')
    t.clock.advance(49 * HOUR)
    const expired = await t.client.get('/v1/me', { token: person.token })
    assert.is(expired.status, 401)
    const fresh = await t.client.post('/v1/auth/sign-in', { json: { email: 's@x.test', password: person.password } })
    const token = fresh.body.session.token
    assert.is((await t.client.post('/v1/auth/sign-out', { token })).status, 204)
    assert.is((await t.client.get('/v1/me', { token })).status, 401)
  } finally {
    await t.close()
  }
})

test('credentials are required, malformed ones are 401, and an API key sent as a bearer token is 401', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'cred')
    assert.is((await t.client.get('/v1/me')).status, 401)
    assert.is((await t.client.get('/v1/me', { headers: { authorization: 'Basic abc' } })).status, 401)
    assert.is((await t.client.get('/v1/me', { token: 'sst_forged' })).status, 401)
    const asBearer = await t.client.get('/v1/me', { token: org.ownerKey.key })
    assert.is(asBearer.status, 401)
    assert.match(asBearer.body.message, /x-api-key/)
    const proper = await t.client.get('/v1/me', { apiKey: org.ownerKey.key })
    assert.is(proper.status, 200)
    assert.equal(proper.body.credential, { kind: 'apiKey', apiKeyId: org.ownerKey.id })
  } finally {
    await t.close()
  }
})

test('the database file never contains a password, session token, invitation token or API key in plaintext', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'bytes')
    const invite = await t.client.post('/v1/invitations', {
      token: org.owner.token,
      json: { email: 'late@bytes.test' },
    })
    const signIn = await t.client.post('/v1/auth/sign-in', {
      json: { email: org.member.email, password: org.member.password },
    })
    const secrets = [
      org.owner.password,
      org.admin.password,
      org.owner.token,
      org.member.token,
      signIn.body.session.token,
      invite.body.token,
      org.ownerKey.key,
      org.adminKey.key,
    ]
    const stored = await storedText(t.app)
    assert.ok(stored.length > 0)
    assert.ok(stored.includes(org.owner.email), 'sanity: plain data is visible in what is stored')
    for (const secret of secrets)
      assert.not.ok(stored.includes(secret), `found a secret in the database: ${secret.slice(0, 6)}…`)
  } finally {
    await t.close()
  }
})

test('passwords are scrypt hashes with the production cost, salted, and verify only the right password', async () => {
  const stored = await hashPassword('open sesame', DEFAULT_SCRYPT)
  assert.match(stored, /^scrypt\$32768\$8\$1\$/)
  assert.is.not(await hashPassword('open sesame', DEFAULT_SCRYPT), stored, 'salted')
  assert.ok(await verifyPassword('open sesame', stored))
  assert.not.ok(await verifyPassword('open sesame!', stored))
  assert.not.ok(await verifyPassword('open sesame', 'plain:open sesame'))
})

test.run()
