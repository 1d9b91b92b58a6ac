/**
 * The organization the control-plane floor comparisons read: one owner with a session, 2,000
 * config objects created through the API (a quarter of them skills, so the owner holds a manager
 * grant on each and receives the skills in `GET /v1/me/skills`), and 1,000 members seeded straight
 * into the SQLite file (sign-up would spend the time in the password KDF).
 *
 * Why shared: the HTTP bench (`control-plane-floor`) and the in-process profile
 * (`bench/profile-request.ts`) must read the same data, so their figures can be put side by side.
 * @module
 */
import { controlPlaneMigrations } from '../../migrations/control-plane/index.ts'
import type { ControlPlaneDb } from '../../src/control-plane/schema.ts'
import { seedMembers } from '../../src/control-plane/testing/seed.ts'
import { openDatabase } from '../../src/storage/database.ts'

/** Sends one request to the control plane (over HTTP or in process). */
export type Send = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response>

/** What the floor and the profile need to know about the world. */
export interface ControlPlaneWorld {
  token: string
  orgId: string
  headers: Record<string, string>
}

/** Objects created through the API; one in four is a skill. */
export const WORLD_OBJECTS = 2_000
/** Members seeded straight into the database (besides the owner). */
export const WORLD_MEMBERS = 1_000

const TYPES = ['agent', 'command', 'context']

async function json(res: Response, what: string): Promise<any> {
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 200)}`)
  return JSON.parse(text)
}

/** A create body of the given index: a skill every fourth, else a small agent, command or context markdown file. */
export function createBody(i: number, label = 'bench'): Record<string, unknown> {
  if (i % 4 === 0) {
    const name = `${label}-skill-${i}`
    return {
      type: 'skill',
      sourceMode: 'cloud',
      title: `Skill ${i}`,
      description: `Bench skill number ${i}`,
      input: {
        rawSourceText: `---\nname: ${name}\ndescription: Bench skill number ${i}\n---\n\nSteps for ${name}.\n`,
      },
    }
  }
  const type = TYPES[i % TYPES.length]!
  return {
    type,
    sourceMode: 'cloud',
    title: `Object ${i}`,
    description: `Bench ${type} ${i}`,
    input: { rawSourceText: `---\ndescription: Bench ${type} ${i}\n---\n\nBench ${type} number ${i}.\n` },
  }
}

/** Signs up the owner, creates the organization, its objects (16 in flight) and members. */
export async function buildWorld(
  send: Send,
  databasePath: string,
  log: (m: string) => void,
): Promise<ControlPlaneWorld> {
  const signedUp = await json(
    await send('POST', '/v1/auth/sign-up', { email: 'owner@bench.test', password: 'bench password', name: 'Owner' }),
    'sign-up',
  )
  const headers = { authorization: `Bearer ${signedUp.session.token}` }
  const org = await json(await send('POST', '/v1/orgs', { name: 'Bench' }, headers), 'create org')
  log(`creating ${WORLD_OBJECTS} config objects through the API`)
  let next = 0
  const worker = async () => {
    while (next < WORLD_OBJECTS) {
      const i = next++
      await json(await send('POST', '/v1/config-objects', createBody(i), headers), `create object ${i}`)
    }
  }
  await Promise.all(Array.from({ length: 16 }, worker))
  log(`seeding ${WORLD_MEMBERS} members`)
  const database = await openDatabase<ControlPlaneDb>({ path: databasePath, migrations: controlPlaneMigrations })
  try {
    await seedMembers(database.db, org.item.id, WORLD_MEMBERS, 'bench')
  } finally {
    await database.close()
  }
  return { token: signedUp.session.token, orgId: org.item.id, headers }
}

/** The four read paths compared with the floor, by label. */
export const READ_PATHS: Record<string, string> = {
  'GET /v1/me': '/v1/me',
  'GET /v1/config-objects?type=skill&limit=50': '/v1/config-objects?type=skill&limit=50',
  'GET /v1/members?limit=50': '/v1/members?limit=50',
  'GET /v1/me/skills?limit=50': '/v1/me/skills?limit=50',
}
