/**
 * The first-party SDK (`sdk/`) against the compiled binary in both modes: everything goes through
 * the generated operations and the hand-written helpers, as an integrator's code would.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  ControlPlaneClient,
  type ServerSentEvent,
  ServiceApiError,
  unwrap,
  WorkspaceClient,
  type WorkspaceEvent,
} from '../../sdk/src/index.ts'
import { assert, compiledBinary, startChild, suite, tempDir } from '../harness.ts'

const test = suite('sdk/live against the binary', { timeoutMs: 300_000 })

const TOKEN = 'sdk-client-token-0123456789abcdef'
const HOST_TOKEN = 'sdk-host-token-0123456789abcdef'

test('on the control plane: sign up, create an org and a skill with files, read the feed as a page and as a resumed stream', async () => {
  const binary = await compiledBinary()
  const dir = tempDir('svc-sdk-cp-')
  const server = await startChild(
    binary,
    ['--mode', 'control-plane', '--data-dir', join(dir.path, 'data'), '--port', '0'],
    {
      env: { HOME: dir.path },
    },
  )
  try {
    const anonymous = new ControlPlaneClient({ baseUrl: server.url })
    const signedUp = await unwrap(
      anonymous.signUp({ body: { email: 'sdk@example.com', password: 'correct horse battery', name: 'Sdk' } }),
    )
    const cp = new ControlPlaneClient({ baseUrl: server.url, sessionToken: signedUp.session.token })
    const org = await unwrap(cp.createOrganization({ body: { name: 'Acme' } }))
    assert.match(org.item.id, /^org_/)

    // Typed errors: the generated error type is the ErrorBody, and unwrap throws it with its code.
    const refused = await cp.createConfigObject({
      body: { type: 'skill', sourceMode: 'cloud', title: '', input: {} } as never,
    })
    assert.ok(refused.error)
    assert.is(typeof refused.error?.code, 'string')
    let thrown: unknown
    try {
      await unwrap(cp.getConfigObject({ path: { configObjectId: 'cob_00000000000000000000000000' } }))
    } catch (error) {
      thrown = error
    }
    assert.instance(thrown, ServiceApiError)
    assert.is((thrown as ServiceApiError).status, 404)

    const page0 = await unwrap(cp.listChangeEvents({ query: { limit: 100 } }))
    const skill = await unwrap(
      cp.createConfigObject({
        body: {
          type: 'skill',
          sourceMode: 'cloud',
          title: 'Release notes',
          input: {
            rawSourceText: '---\nname: release-notes\ndescription: Drafts release notes\n---\n\nRun the script.\n',
            files: [
              { path: 'scripts/run.sh', content: '#!/bin/sh\necho hi\n', executable: true },
              { path: 'assets/x.bin', content: Buffer.from([0, 255, 1]).toString('base64'), encoding: 'base64' },
            ],
          },
        },
      }),
    )
    const resolved = await unwrap(cp.getResolvedConfigObject({ path: { configObjectId: skill.item.id } }))
    const script = resolved.item.files.find((f) => f.path.endsWith('scripts/run.sh'))
    assert.equal([script?.executable, script?.encoding], [true, 'utf8'])
    const binaryFile = resolved.item.files.find((f) => f.path.endsWith('assets/x.bin'))
    assert.equal(Buffer.from(binaryFile!.content, 'base64'), Buffer.from([0, 255, 1]))

    // A page's `next` goes back as `after` unchanged (both numbers in the generated types).
    const page1 = await unwrap(cp.listChangeEvents({ query: { after: page0.next } }))
    assert.ok(page1.items.some((e) => e.kind === 'config_object.created'))
    const again = await unwrap(cp.listChangeEvents({ query: { after: page1.next } }))
    assert.equal(again.items, [])

    // The stream resumes from a stored position: everything after page0, in order, then live.
    const abort = new AbortController()
    const seen: ServerSentEvent<{ seq: number; kind: string }>[] = []
    const reading = (async () => {
      for await (const event of cp.followChanges({ lastEventId: page0.next, signal: abort.signal })) {
        seen.push(event)
        if (event.data.kind === 'config_object.archived') abort.abort()
      }
    })()
    await unwrap(cp.archiveConfigObject({ path: { configObjectId: skill.item.id } }))
    await Promise.race([reading, new Promise((_, fail) => setTimeout(() => fail(new Error('no event')), 20_000))])
    assert.equal(seen[0]!.id, String(page1.items[0]!.seq))
    assert.ok(seen.every((e, i) => i === 0 || e.data.seq > seen[i - 1]!.data.seq))
  } finally {
    await server.stop()
    dir.remove()
  }
})

test('on the workspace server (manual approvals): a held skill write is allowed through the approval feed and a file-session batch round-trips', async () => {
  const binary = await compiledBinary()
  const dir = tempDir('svc-sdk-ws-')
  const root = join(dir.path, 'ws')
  mkdirSync(root)
  writeFileSync(
    join(dir.path, 'server.json'),
    JSON.stringify({ token: TOKEN, hostToken: HOST_TOKEN, approval: { mode: 'manual', timeoutMs: 60_000 } }),
  )
  const server = await startChild(
    binary,
    ['--config', join(dir.path, 'server.json'), '--data-dir', join(dir.path, 'data'), '--port', '0'],
    { cwd: root, env: { HOME: dir.path } },
  )
  const abort = new AbortController()
  try {
    const ws = new WorkspaceClient({ baseUrl: server.url, token: TOKEN })
    const host = new WorkspaceClient({ baseUrl: server.url, hostToken: HOST_TOKEN })
    const workspaceId = (await unwrap(ws.listWorkspaces())).items[0]!.id

    // The host allows every request it sees on the approval feed and keeps what it saw.
    const requested: ServerSentEvent<WorkspaceEvent>[] = []
    const approving = (async () => {
      for await (const event of host.followApprovals({ signal: abort.signal })) {
        if (event.event !== 'approval.requested') continue
        requested.push(event)
        const id = String(event.data.approval?.id)
        await unwrap(host.replyApproval({ path: { approvalId: id }, body: { reply: 'allow' } }))
      }
    })()

    const written = await unwrap(
      ws.upsertSkill({
        path: { id: workspaceId },
        body: {
          name: 'release-notes',
          content: '---\nname: release-notes\ndescription: Drafts release notes\n---\n\nRun it.\n',
          files: [{ path: 'scripts/run.sh', content: '#!/bin/sh\necho hi\n', executable: true }],
        },
      }),
    )
    assert.is(written.name, 'release-notes')
    assert.is(requested.length, 1, 'the write was held for the host')
    const file = await unwrap(
      ws.getSkillFile({ path: { id: workspaceId, name: 'release-notes', path: 'scripts/run.sh' } }),
    )
    assert.equal([file.encoding, file.executable, file.content], ['utf8', true, '#!/bin/sh\necho hi\n'])

    const session = await unwrap(ws.createFileSession({ path: { id: workspaceId }, body: { write: true } }))
    const writes = await unwrap(
      ws.fileWriteBatch({
        path: { sessionId: session.session.id },
        body: { writes: [{ path: 'notes/a.txt', contentBase64: Buffer.from('alpha').toString('base64') }] },
      }),
    )
    assert.ok(writes.items.every((item) => item.ok))
    assert.is(requested.length, 2, 'the batch was held once')
    const read = await unwrap(
      ws.fileReadBatch({ path: { sessionId: session.session.id }, body: { paths: ['notes/a.txt', 'missing.txt'] } }),
    )
    const [hit, miss] = read.items
    // The batch item schema is one open object (ok, or code and message), so the bytes are read by name.
    const bytes = (hit as { contentBase64?: string } | undefined)?.contentBase64 ?? ''
    assert.ok(hit?.ok)
    assert.is(Buffer.from(bytes, 'base64').toString(), 'alpha')
    assert.ok(miss && !miss.ok && miss.code === 'file_not_found')
    abort.abort()
    await approving
  } finally {
    abort.abort()
    await server.stop()
    dir.remove()
  }
})

test.run()
