/**
 * Regenerates the SDK's typed operations from both surfaces' OpenAPI documents: `npm run sdk`
 * (`bun sdk/generate.ts`). The documents are built in-process from the route declarations
 * (src/openapi-documents.ts) and handed to `@hey-api/openapi-ts`, which writes
 * `sdk/src/gen/control-plane/` and `sdk/src/gen/workspace/` (the documents themselves are served
 * by each server at `/openapi.json` and are not kept here).
 *
 * `--check` (the drift check, also run by tests/sdk/sdk-drift.test.ts) generates into a temp
 * directory and fails, naming the files, when anything differs from what is checked in.
 * @module
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { buildOpenApiDocuments } from '../src/openapi-documents.ts'

/**
 * The generator, loaded by a computed name: its type declarations reach into optional peers
 * (Angular, Nuxt, axios) that are not installed, and the project type-checks libraries too.
 */
const GENERATOR = '@hey-api/openapi-ts'
const { createClient } = (await import(GENERATOR)) as { createClient: (config: unknown) => Promise<unknown> }

const sdkRoot = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname)

/** Which document becomes which generated folder and API class. */
const SURFACES = [
  { document: 'control-plane.openapi.json', folder: 'control-plane', container: 'ControlPlaneApi' },
  { document: 'workspace.openapi.json', folder: 'workspace', container: 'WorkspaceApi' },
] as const

/** Writes the generated code under `root` (an `sdk/` layout). */
export async function generateSdk(root: string): Promise<void> {
  const state = mkdtempSync(join(tmpdir(), 'svc-sdk-state-'))
  try {
    mkdirSync(join(state, 'app'))
    const documents = await buildOpenApiDocuments(join(state, 'app'))
    for (const surface of SURFACES) {
      const file = join(state, surface.document)
      writeFileSync(file, `${JSON.stringify(documents[surface.document], null, 2)}\n`)
      const output = join(root, 'src/gen', surface.folder)
      rmSync(output, { recursive: true, force: true })
      await createClient({
        input: file,
        // `.ts` specifiers: the package build rewrites them to `.js`, which Node's ESM resolver needs.
        output: { path: output, importFileExtension: '.ts' },
        logs: { level: 'silent' },
        plugins: [
          '@hey-api/client-fetch',
          '@hey-api/typescript',
          // One class per surface whose instances carry their own client (base URL, credentials).
          {
            name: '@hey-api/sdk',
            operations: { strategy: 'single', containerName: surface.container, methods: 'instance' },
          },
        ],
      })
    }
  } finally {
    rmSync(state, { recursive: true, force: true })
  }
}

function listFiles(dir: string, out: string[] = [], base = dir): string[] {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) listFiles(path, out, base)
    else out.push(relative(base, path))
  }
  return out
}

/** Paths (relative to `sdk/`) that differ between the checked-in SDK and a fresh generation. */
export async function sdkDrift(): Promise<string[]> {
  const fresh = mkdtempSync(join(tmpdir(), 'svc-sdk-fresh-'))
  try {
    await generateSdk(fresh)
    const differing: string[] = []
    for (const part of ['src/gen']) {
      const mine = new Set(listFiles(join(sdkRoot, part)).map((f) => join(part, f)))
      const theirs = new Set(listFiles(join(fresh, part)).map((f) => join(part, f)))
      for (const file of new Set([...mine, ...theirs])) {
        if (!mine.has(file) || !theirs.has(file)) differing.push(file)
        else if (!readFileSync(join(sdkRoot, file)).equals(readFileSync(join(fresh, file)))) differing.push(file)
      }
    }
    return differing.sort()
  } finally {
    rmSync(fresh, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  if (process.argv.includes('--check')) {
    const differing = await sdkDrift()
    if (differing.length) {
      console.error(`sdk: regenerating changes ${differing.length} file(s); run npm run sdk:\n${differing.join('\n')}`)
      process.exit(1)
    }
    console.log('sdk: generated code matches the OpenAPI documents')
  } else {
    await generateSdk(sdkRoot)
    console.log('sdk: regenerated sdk/src/gen')
  }
}
