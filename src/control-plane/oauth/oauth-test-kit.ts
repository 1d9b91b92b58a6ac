/**
 * Helpers for the authorization server's tests: form posts to the OAuth endpoints and a device
 * sign-in approved through the API, as a person at a terminal and a browser would do it.
 * @module
 */
import type { CheckedResponse, ContractClient } from '../testing/contract-client.ts'
import { DEVICE_CODE_GRANT } from './oauth-clients.ts'

/** Posts form fields to an OAuth endpoint through the contract client. */
export function postForm(
  client: ContractClient,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<CheckedResponse> {
  return client.post(path, {
    body: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  })
}

/** Starts a device sign-in for `clientId`. */
export async function startDevice(client: ContractClient, clientId = 'opencode', extra: Record<string, string> = {}) {
  const res = await postForm(client, '/oauth/device_authorization', { client_id: clientId, ...extra })
  if (res.status !== 200) throw new Error(`device_authorization answered ${res.status}: ${JSON.stringify(res.body)}`)
  return res.body as { device_code: string; user_code: string; interval: number; expires_in: number }
}

/** Polls the token endpoint once for a device code. */
export function pollDevice(client: ContractClient, deviceCode: string, clientId = 'opencode') {
  return postForm(client, '/oauth/token', {
    grant_type: DEVICE_CODE_GRANT,
    device_code: deviceCode,
    client_id: clientId,
  })
}

/** A full device sign-in approved by `sessionToken` (in `orgId`, else the session's organization). */
export async function deviceTokens(
  client: ContractClient,
  sessionToken: string,
  options: { orgId?: string; clientId?: string } = {},
): Promise<{
  access_token: string
  refresh_token: string
  expires_in: number
  scope: string
  organization: { id: string; name: string }
}> {
  const started = await startDevice(client, options.clientId)
  const approved = await client.post('/v1/oauth/device/approve', {
    token: sessionToken,
    json: { userCode: started.user_code, ...(options.orgId ? { orgId: options.orgId } : {}) },
  })
  if (approved.status !== 200) throw new Error(`approve answered ${approved.status}: ${JSON.stringify(approved.body)}`)
  const res = await pollDevice(client, started.device_code, options.clientId)
  if (res.status !== 200) throw new Error(`token answered ${res.status}: ${JSON.stringify(res.body)}`)
  return res.body
}
