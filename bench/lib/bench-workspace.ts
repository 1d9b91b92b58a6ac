/**
 * The bench's standard workspace and its read routes: 20 skills, 20 commands, a commented
 * `opencode.jsonc` with 5 MCP servers and 2 plugins.
 *
 * Why one place: `workspace-reads` measures these routes' throughput and `load-rss` measures memory
 * after the same load, so both must fill the workspace and pick the routes the same way.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** Fills the bench workspace: 20 skills, 20 commands, a commented opencode.jsonc. */
export function populateBenchWorkspace(ws: string): void {
  for (let i = 0; i < 20; i++) {
    const name = `skill-${String(i).padStart(2, '0')}`
    mkdirSync(join(ws, '.opencode/skills', name), { recursive: true })
    writeFileSync(
      join(ws, '.opencode/skills', name, 'SKILL.md'),
      `---\nname: ${name}\ndescription: Bench skill number ${i}, which explains a task in a paragraph of text.\n---\n\n# ${name}\n\n${'Steps to follow. '.repeat(40)}\n`,
    )
    mkdirSync(join(ws, '.opencode/commands'), { recursive: true })
    writeFileSync(
      join(ws, '.opencode/commands', `command-${i}.md`),
      `---\ndescription: Bench command ${i}\nagent: build\nsubtask: ${i % 2 === 0}\n---\n\nDo task ${i} with $ARGUMENTS.\n`,
    )
  }
  const mcp = Object.fromEntries(
    Array.from({ length: 5 }, (_, i) => [
      `server-${i}`,
      i % 2
        ? { type: 'remote', url: `https://mcp${i}.example/sse`, headers: { Authorization: `Bearer secret-${i}` } }
        : { type: 'local', command: ['npx', '-y', `server-${i}`], environment: { KEY: `secret-${i}` } },
    ]),
  )
  writeFileSync(
    join(ws, 'opencode.jsonc'),
    `{\n  // bench config\n  "model": "a/b",\n  "plugin": ["p-one@1", "@s/p-two"],\n  "mcp": ${JSON.stringify(mcp, null, 2).replace(/\n/g, '\n  ')}\n}\n`,
  )
}

/** The read routes clients poll, for workspace `id`. */
export function benchReadPaths(id: string): string[] {
  return [
    '/workspaces',
    `/workspace/${id}/config`,
    `/workspace/${id}/skills`,
    `/workspace/${id}/commands`,
    `/workspace/${id}/mcp`,
  ]
}
