import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite, takeSse } from '../../../tests/harness.ts'
import { CLIENT_TOKEN, eventually, HOST_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'

const test = suite('workspace/approvals', { timeoutMs: 20_000 })

const SKILL = {
  name: 'pending-skill',
  content: '---\nname: pending-skill\ndescription: Waits for the host.\n---\n\nBody.\n',
}

async function pendingOne(s: TestServer) {
  return eventually(
    async () => {
      const items = (await (await s.req('/approvals', { hostToken: HOST_TOKEN })).json()).items
      return items.length === 1 ? items[0] : undefined
    },
    3000,
    'a pending approval',
  )
}

test('manual mode holds a write until the host allows it, then writes and audits', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const write = s.req(`/workspace/${s.wsId}/skills`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      headers: { 'x-service-client-id': 'laptop' },
      json: SKILL,
    })
    const pending = await pendingOne(s)
    assert.is(pending.action, 'skills.upsert')
    assert.is(pending.workspaceId, s.wsId)
    assert.equal(pending.paths, [join(s.root, '.opencode/skills/pending-skill/SKILL.md')])
    assert.equal(pending.actor, { type: 'remote', scope: 'collaborator', clientId: 'laptop' })
    assert.not.ok(JSON.stringify(pending).includes('tokenHash'))
    const decided = await s.req(`/approvals/${pending.id}`, {
      method: 'POST',
      hostToken: HOST_TOKEN,
      json: { reply: 'allow' },
    })
    assert.equal(await decided.json(), { ok: true, allowed: true })
    const res = await write
    assert.is(res.status, 200)
    assert.match(readFileSync(join(s.root, '.opencode/skills/pending-skill/SKILL.md'), 'utf8'), /Waits for the host/)
    const audit = (await (await s.req(`/workspace/${s.wsId}/audit`, { token: CLIENT_TOKEN })).json()).items
    assert.equal(
      audit.map((e: { action: string }) => e.action),
      ['skills.upsert', 'approval.allow'],
    )
    const again = await s.req(`/approvals/${pending.id}`, {
      method: 'POST',
      hostToken: HOST_TOKEN,
      json: { reply: 'deny' },
    })
    assert.is(again.status, 404)
    assert.is((await again.json()).code, 'approval_not_found')
  } finally {
    await s.dispose()
  }
})

test('a denied write answers 403 write_denied and changes nothing', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const before = readFileSync(join(s.root, 'opencode.jsonc'), 'utf8')
    const write = s.req(`/workspace/${s.wsId}/config`, {
      method: 'PATCH',
      token: CLIENT_TOKEN,
      json: { opencode: { model: 'x/y' } },
    })
    const pending = await pendingOne(s)
    assert.is(pending.action, 'config.patch')
    await s.req(`/approvals/${pending.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'deny' } })
    const res = await write
    assert.is(res.status, 403)
    assert.equal(await res.json(), {
      code: 'write_denied',
      message: 'Write request denied',
      details: { requestId: pending.id, reason: 'denied' },
    })
    assert.is(readFileSync(join(s.root, 'opencode.jsonc'), 'utf8'), before)
    const audit = (await (await s.req(`/workspace/${s.wsId}/audit`, { token: CLIENT_TOKEN })).json()).items
    assert.equal(
      audit.map((e: { action: string }) => e.action),
      ['approval.deny'],
    )
    assert.is(
      (await (await s.req(`/workspace/${s.wsId}/config`, { token: CLIENT_TOKEN })).json()).updatedAt,
      null,
      'a decision is not a write',
    )
  } finally {
    await s.dispose()
  }
})

test('an undecided write times out with reason timeout and the timeout is audited', async () => {
  const s = await startTestServer({ approval: 'manual', timeoutMs: 1000 })
  try {
    const started = Date.now()
    const res = await s.req(`/workspace/${s.wsId}/commands`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { name: 'late', template: 'Too late.' },
    })
    assert.is(res.status, 403)
    const body = await res.json()
    assert.is(body.code, 'write_denied')
    assert.is(body.details.reason, 'timeout')
    assert.ok(Date.now() - started >= 900)
    assert.equal((await (await s.req('/approvals', { hostToken: HOST_TOKEN })).json()).items, [])
    const audit = (await (await s.req(`/workspace/${s.wsId}/audit`, { token: CLIENT_TOKEN })).json()).items
    assert.equal(
      audit.map((e: { action: string }) => e.action),
      ['approval.timeout'],
    )
  } finally {
    await s.dispose()
  }
})

test('a write whose target changed while it waited fails with 409 and keeps the other change', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const file = join(s.root, '.opencode/skills/hello-world/SKILL.md')
    const write = s.req(`/workspace/${s.wsId}/skills`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { name: 'hello-world', content: 'Replaced.', description: 'Replaced by the client.' },
    })
    const pending = await pendingOne(s)
    const outside = '---\nname: hello-world\ndescription: Edited by someone else meanwhile.\n---\n\nTheirs.\n'
    writeFileSync(file, outside)
    await s.req(`/approvals/${pending.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'allow' } })
    const res = await write
    assert.is(res.status, 409)
    assert.is((await res.json()).code, 'write_conflict')
    assert.is(readFileSync(file, 'utf8'), outside)
  } finally {
    await s.dispose()
  }
})

test('auto mode writes at once without queuing anything', async () => {
  const s = await startTestServer({ approval: 'auto' })
  try {
    const res = await s.req(`/workspace/${s.wsId}/commands`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { name: 'quick', template: 'Do it now.' },
    })
    assert.is(res.status, 200)
    assert.ok((await res.json()).items.some((c: { name: string }) => c.name === 'quick'))
    const events = (await (await s.req(`/workspace/${s.wsId}/events`, { token: CLIENT_TOKEN })).json()).items
    assert.not.ok(events.some((e: { type: string }) => e.type.startsWith('approval.')))
    const audit = (await (await s.req(`/workspace/${s.wsId}/audit`, { token: CLIENT_TOKEN })).json()).items
    assert.equal(
      audit.map((e: { action: string }) => e.action),
      ['commands.upsert'],
    )
  } finally {
    await s.dispose()
  }
})

test('approval requests and decisions stream on /approvals/events and on the workspace stream', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const hostStream = await s.req('/approvals/events', { hostToken: HOST_TOKEN })
    assert.is(hostStream.status, 200)
    assert.match(hostStream.headers.get('content-type') ?? '', /text\/event-stream/)
    const wsStream = await s.req(`/workspace/${s.wsId}/events`, {
      token: CLIENT_TOKEN,
      headers: { accept: 'text/event-stream' },
    })
    const hostFrames = takeSse(hostStream, 2)
    const wsFrames = takeSse(wsStream, 2)
    const write = s.req(`/workspace/${s.wsId}/mcp/tracker`, {
      method: 'PATCH',
      token: CLIENT_TOKEN,
      json: { enabled: false },
    })
    const pending = await pendingOne(s)
    await s.req(`/approvals/${pending.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'allow' } })
    assert.is((await write).status, 200)
    for (const frames of [await hostFrames, await wsFrames]) {
      assert.equal(
        frames.map((f) => f.event),
        ['approval.requested', 'approval.decided'],
      )
      const [requested, decided] = frames.map((f) => JSON.parse(f.data))
      assert.is(requested.approval.id, pending.id)
      assert.is(decided.approval.id, pending.id)
      assert.equal(decided.decision.allowed, true)
      assert.is(decided.decision.reason, 'allowed')
      assert.ok(Number(frames[1]!.id) > Number(frames[0]!.id))
    }
  } finally {
    await s.dispose()
  }
})

test('a write that would change nothing is answered at once without asking the host', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const review =
      '---\ndescription: Review the current change\nagent: reviewer\nsubtask: true\n---\n\nReview the staged diff and list problems by severity.\n'
    assert.is(readFileSync(join(s.root, '.opencode/commands/review.md'), 'utf8'), review)
    const same = await s.req(`/workspace/${s.wsId}/commands`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: {
        name: 'review',
        template: 'Review the staged diff and list problems by severity.',
        description: 'Review the current change',
        agent: 'reviewer',
        subtask: true,
      },
    })
    assert.is(same.status, 200)
    const patch = await s.req(`/workspace/${s.wsId}/config`, {
      method: 'PATCH',
      token: CLIENT_TOKEN,
      json: { opencode: { model: 'anthropic/claude-sonnet-4' }, workspace: { version: 1 } },
    })
    assert.is(patch.status, 200)
    assert.equal((await (await s.req('/approvals', { hostToken: HOST_TOKEN })).json()).items, [])
    assert.equal((await (await s.req(`/workspace/${s.wsId}/audit`, { token: CLIENT_TOKEN })).json()).items, [])
  } finally {
    await s.dispose()
  }
})

test('a held write is withdrawn when its client disconnects', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const controller = new AbortController()
    const write = s
      .req(`/workspace/${s.wsId}/commands`, {
        method: 'POST',
        token: CLIENT_TOKEN,
        json: { name: 'gone', template: 'x' },
        signal: controller.signal,
      })
      .catch(() => null)
    const pending = await pendingOne(s)
    controller.abort()
    await eventually(
      async () =>
        (await (await s.req('/approvals', { hostToken: HOST_TOKEN })).json()).items.length === 0 ? true : undefined,
      3000,
      'the withdrawal',
    )
    await write
    const events = (await (await s.req(`/workspace/${s.wsId}/events`, { token: CLIENT_TOKEN })).json()).items
    const decided = events.find((e: { type: string }) => e.type === 'approval.decided')
    assert.equal(
      [decided.approval.id, decided.decision.reason, decided.decision.allowed],
      [pending.id, 'cancelled', false],
    )
    assert.is(
      (await s.req(`/approvals/${pending.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'allow' } }))
        .status,
      404,
    )
    assert.not.ok(existsSync(join(s.root, '.opencode/commands/gone.md')))
  } finally {
    await s.dispose()
  }
})

test('stopping the server answers a write waiting for the host 503 server_stopping and records the approval cancelled', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const write = s.req(`/workspace/${s.wsId}/skills`, { method: 'POST', token: CLIENT_TOKEN, json: SKILL })
    const pending = await pendingOne(s)
    await s.app.beginStop?.()
    const res = await write
    assert.is(res.status, 503)
    assert.is(res.headers.get('retry-after'), '5')
    assert.is((await res.json()).code, 'server_stopping')
    assert.not.ok(existsSync(join(s.root, '.opencode/skills/pending-skill/SKILL.md')), 'nothing was written')
    const audit = (await (await s.req(`/workspace/${s.wsId}/audit`, { token: CLIENT_TOKEN })).json()).items
    assert.ok(
      audit.some((e: { action: string; target: string }) => e.action === 'approval.cancel' && e.target === pending.id),
    )
    const events = (await (await s.req(`/workspace/${s.wsId}/events`, { token: CLIENT_TOKEN })).json()).items
    const decided = events.find((e: { type: string }) => e.type === 'approval.decided')
    assert.equal(decided.decision, { allowed: false, reason: 'cancelled', stopping: true })
    const late = await s.req(`/workspace/${s.wsId}/skills`, { method: 'POST', token: CLIENT_TOKEN, json: SKILL })
    assert.is((await late.json()).code, 'server_stopping', 'a write arriving after the stop began is refused too')
  } finally {
    await s.dispose()
  }
})

test.run()
