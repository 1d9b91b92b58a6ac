import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite, takeSse } from '../../../tests/harness.ts'
import { CLIENT_TOKEN, eventually, HOST_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'

const test = suite('workspace/events', { timeoutMs: 20_000 })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const page = async (s: TestServer, since = 0) =>
  (await (await s.req(`/workspace/${s.wsId}/events?since=${since}`, { token: CLIENT_TOKEN })).json()) as {
    items: Array<Record<string, any>>
    cursor: number
  }

test('an outside edit to a SKILL.md produces exactly one event, and a same-content rewrite none', async () => {
  const s = await startTestServer({ debounceMs: 60 })
  try {
    const file = join(s.root, '.opencode/skills/hello-world/SKILL.md')
    const edited = '---\nname: hello-world\ndescription: Edited outside the server.\n---\n\nNew body.\n'
    // An editor often truncates, writes in pieces and rewrites: several notifications, one change.
    writeFileSync(file, '')
    writeFileSync(file, edited.slice(0, 20))
    writeFileSync(file, edited)
    const first = await eventually(
      async () => {
        const p = await page(s)
        return p.items.length ? p : undefined
      },
      3000,
      'the skill event',
    )
    await sleep(300)
    const settled = await page(s)
    assert.is(settled.items.length, 1)
    assert.equal(
      {
        type: settled.items[0]!.type,
        reason: settled.items[0]!.reason,
        source: settled.items[0]!.source,
        trigger: settled.items[0]!.trigger,
      },
      {
        type: 'reload',
        reason: 'skills',
        source: 'disk',
        trigger: {
          type: 'skill',
          name: 'hello-world',
          action: 'updated',
          path: '.opencode/skills/hello-world/SKILL.md',
        },
      },
    )
    assert.is(first.cursor, settled.items[0]!.seq)
    const skill = await (await s.req(`/workspace/${s.wsId}/skills/hello-world`, { token: CLIENT_TOKEN })).json()
    assert.is(skill.item.description, 'Edited outside the server.')
    writeFileSync(file, edited)
    await sleep(300)
    assert.is((await page(s)).items.length, 1)
  } finally {
    await s.dispose()
  }
})

test('a new skill directory created outside the server is picked up and listed', async () => {
  const s = await startTestServer({ debounceMs: 60 })
  try {
    await (await s.req(`/workspace/${s.wsId}/skills`, { token: CLIENT_TOKEN })).json()
    mkdirSync(join(s.root, '.opencode/skills/from-disk'))
    writeFileSync(
      join(s.root, '.opencode/skills/from-disk/SKILL.md'),
      '---\nname: from-disk\ndescription: Made by hand.\n---\nx\n',
    )
    const event = await eventually(
      async () => (await page(s)).items.find((e) => e.trigger?.name === 'from-disk'),
      3000,
      'the new skill event',
    )
    assert.is(event.trigger.action, 'added')
    const names = (await (await s.req(`/workspace/${s.wsId}/skills`, { token: CLIENT_TOKEN })).json()).items.map(
      (x: { name: string }) => x.name,
    )
    assert.equal(names, ['from-disk', 'hello-world'])
  } finally {
    await s.dispose()
  }
})

test('a write through the server emits one server event and no duplicate from the watcher', async () => {
  const s = await startTestServer({ debounceMs: 60 })
  try {
    const res = await s.req(`/workspace/${s.wsId}/config`, {
      method: 'PATCH',
      token: CLIENT_TOKEN,
      json: { opencode: { model: 'a/b' } },
    })
    assert.is(res.status, 200)
    await sleep(300)
    const items = (await page(s)).items
    assert.is(items.length, 1)
    assert.equal([items[0]!.reason, items[0]!.source, items[0]!.trigger.name], ['config', 'server', 'opencode.jsonc'])
    // Writing the same value again changes no content: no event, no audit.
    await s.req(`/workspace/${s.wsId}/config`, {
      method: 'PATCH',
      token: CLIENT_TOKEN,
      json: { opencode: { model: 'a/b' } },
    })
    await sleep(200)
    assert.is((await page(s)).items.length, 1)
    assert.is((await (await s.req(`/workspace/${s.wsId}/audit`, { token: CLIENT_TOKEN })).json()).items.length, 1)
  } finally {
    await s.dispose()
  }
})

test('SSE resume with Last-Event-ID delivers everything missed while disconnected', async () => {
  const s = await startTestServer({ watch: false })
  try {
    const stream = await s.req(`/workspace/${s.wsId}/events`, {
      token: CLIENT_TOKEN,
      headers: { accept: 'text/event-stream' },
    })
    const firstFrames = takeSse(stream, 1)
    await s.req(`/workspace/${s.wsId}/commands`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { name: 'one', template: '1' },
    })
    const [first] = await firstFrames
    assert.ok(first)
    // takeSse returned the iterator, which cancels the stream: the client is now disconnected.
    for (const name of ['two', 'three', 'four'])
      await s.req(`/workspace/${s.wsId}/commands`, {
        method: 'POST',
        token: CLIENT_TOKEN,
        json: { name, template: name },
      })
    const resumed = await s.req(`/workspace/${s.wsId}/events`, {
      token: CLIENT_TOKEN,
      headers: { accept: 'text/event-stream', 'last-event-id': first!.id! },
    })
    const framesPromise = takeSse(resumed, 4, 3000)
    await s.req(`/workspace/${s.wsId}/commands`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { name: 'five', template: '5' },
    })
    const frames = await framesPromise
    assert.equal(
      frames.map((f) => JSON.parse(f.data).trigger.name),
      ['two', 'three', 'four', 'five'],
    )
    const ids = frames.map((f) => Number(f.id))
    assert.ok(ids.every((id, i) => id > (i ? ids[i - 1]! : Number(first!.id))))
    assert.equal(
      frames.map((f) => f.event),
      ['reload', 'reload', 'reload', 'reload'],
    )
  } finally {
    await s.dispose()
  }
})

test('polling with since pages through events with a cursor', async () => {
  const s = await startTestServer({ watch: false })
  try {
    for (const name of ['a', 'b', 'c'])
      await s.req(`/workspace/${s.wsId}/commands`, {
        method: 'POST',
        token: CLIENT_TOKEN,
        json: { name, template: name },
      })
    const all = await page(s)
    assert.is(all.items.length, 3)
    const rest = await page(s, all.items[0]!.seq)
    assert.equal(
      rest.items.map((e) => e.trigger.name),
      ['b', 'c'],
    )
    const none = await page(s, rest.cursor)
    assert.equal(none.items, [])
    assert.is(none.cursor, rest.cursor)
    const bad = await s.req(`/workspace/${s.wsId}/events?since=abc`, { token: CLIENT_TOKEN })
    assert.is(bad.status, 400)
  } finally {
    await s.dispose()
  }
})

test('a restart keeps events, tokens and audit', async () => {
  let s = await startTestServer({ watch: false })
  try {
    const issued = await (
      await s.req('/tokens', { method: 'POST', hostToken: HOST_TOKEN, json: { scope: 'viewer', label: 'phone' } })
    ).json()
    await s.req(`/workspace/${s.wsId}/commands`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { name: 'kept', template: 'kept' },
    })
    const before = await page(s)
    s = await s.restart()
    const after = await page(s)
    assert.equal(after.items, before.items)
    assert.is((await s.req('/workspaces', { token: issued.token })).status, 200)
    const tokens = (await (await s.req('/tokens', { hostToken: HOST_TOKEN })).json()).items
    assert.equal(
      tokens.map((t: { label: string }) => t.label),
      ['phone'],
    )
    const audit = (await (await s.req(`/workspace/${s.wsId}/audit`, { token: CLIENT_TOKEN })).json()).items
    assert.equal(
      audit.map((e: { action: string }) => e.action),
      ['commands.upsert'],
    )
    await s.req(`/workspace/${s.wsId}/commands`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { name: 'later', template: 'later' },
    })
    const next = await page(s, before.cursor)
    assert.is(next.items.length, 1)
    assert.ok(next.items[0]!.seq > before.cursor)
  } finally {
    await s.dispose()
  }
})

test('the watcher follows a commands directory that is deleted and created again', async () => {
  const s = await startTestServer({ debounceMs: 40 })
  try {
    const { rmSync } = await import('node:fs')
    rmSync(join(s.root, '.opencode/commands'), { recursive: true })
    await eventually(
      async () => (await page(s)).items.find((e) => e.trigger?.name === 'review' && e.trigger.action === 'removed'),
      3000,
      'the removal event',
    )
    await sleep(150)
    mkdirSync(join(s.root, '.opencode/commands'))
    await sleep(150)
    writeFileSync(join(s.root, '.opencode/commands/again.md'), '---\ndescription: back\n---\n\nAgain.\n')
    await eventually(
      async () => (await page(s)).items.find((e) => e.trigger?.name === 'again'),
      3000,
      'the event for a file in the new directory',
    )
    const names = (await (await s.req(`/workspace/${s.wsId}/commands`, { token: CLIENT_TOKEN })).json()).items.map(
      (c: { name: string }) => c.name,
    )
    assert.equal(names, ['again'])
  } finally {
    await s.dispose()
  }
})

test('unrelated files in the workspace root do not flush the read cache or emit events', async () => {
  const s = await startTestServer({ debounceMs: 40 })
  try {
    const ws = s.app.services.workspaces.get(s.wsId)
    await (await s.req(`/workspace/${s.wsId}/skills`, { token: CLIENT_TOKEN })).json()
    let loads = 0
    const original = ws.cache.get.bind(ws.cache)
    ws.cache.get = ((key: string, load: () => Promise<unknown>) =>
      original(key, () => {
        loads++
        return load()
      })) as typeof ws.cache.get
    for (let i = 0; i < 5; i++) writeFileSync(join(s.root, `notes-${i}.txt`), String(i))
    await sleep(200)
    await (await s.req(`/workspace/${s.wsId}/skills`, { token: CLIENT_TOKEN })).json()
    assert.is(loads, 0, 'the cached skills body was still valid')
    assert.equal((await page(s)).items, [])
  } finally {
    await s.dispose()
  }
})

test.run()
