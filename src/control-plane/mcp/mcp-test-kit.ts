/**
 * Test kit for the MCP endpoint: a control plane listening on a loopback port with a fixture
 * organization, and the MCP SDK's own client connected over Streamable HTTP with a chosen
 * credential. Always `close()` in `finally`.
 * @module
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { serve, type Listener } from '../../serve.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'
import {
  startTestControlPlane,
  type TestControlPlane,
  type TestControlPlaneOptions,
} from '../testing/test-control-plane.ts'

/** A listening control plane with a fixture organization. */
export interface McpTestPlane {
  plane: TestControlPlane
  org: FixtureOrg
  url: string
  /** The `/mcp` URL. */
  mcpUrl: string
  close(): Promise<void>
}

/** A credential to connect with. */
export type McpCredential = { apiKey: string } | { token: string; orgId?: string }

/** The headers a credential is sent as. */
export function credentialHeaders(credential: McpCredential): Record<string, string> {
  if ('apiKey' in credential) return { 'x-api-key': credential.apiKey }
  return {
    authorization: `Bearer ${credential.token}`,
    ...(credential.orgId ? { 'x-service-org-id': credential.orgId } : {}),
  }
}

/** Starts a control plane on a loopback port with a fixture organization `label`. */
export async function startMcpTestPlane(
  options: TestControlPlaneOptions & { label?: string; listen?: boolean } = {},
): Promise<McpTestPlane> {
  const plane = await startTestControlPlane(options)
  let listener: Listener | undefined
  try {
    const org = await buildFixtureOrg(plane.client, options.label ?? 'mcp')
    listener = await serve({ host: '127.0.0.1', port: 0, fetch: plane.app.fetch })
    const url = `http://127.0.0.1:${listener.port}`
    const stop = listener
    return {
      plane,
      org,
      url,
      mcpUrl: `${url}/mcp`,
      async close() {
        await stop.stop()
        await plane.close()
      },
    }
  } catch (error) {
    await listener?.stop()
    await plane.close()
    throw error
  }
}

/** Connects the SDK client to `mcpUrl` with `credential`. */
export async function connectClient(
  mcpUrl: string,
  credential: McpCredential,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    requestInit: { headers: credentialHeaders(credential) },
  })
  const client = new Client({ name: 'mcp-test', version: '1.0.0' })
  await client.connect(transport)
  return { client, transport }
}

/** The JSON a tool answered (its structured content). */
export function toolJson(result: unknown): Record<string, unknown> {
  const r = result as { structuredContent?: Record<string, unknown>; content?: Array<{ text?: string }> }
  return r.structuredContent ?? (JSON.parse(r.content?.[0]?.text ?? 'null') as Record<string, unknown>)
}
