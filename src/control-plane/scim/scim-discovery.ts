/**
 * SCIM's discovery resources (RFC 7644 §4): what this service supports (`ServiceProviderConfig`),
 * the resource types it serves (`ResourceTypes`) and their attributes (`Schemas`, RFC 7643 §7).
 * They state exactly what the Users and Groups endpoints do: PATCH and ETags yes; bulk, sort,
 * password change and complex filters no; one `eq` filter per request, at most 200 per page.
 * @module
 */
import { GROUP_URN } from './scim-groups.ts'
import { MAX_SCIM_BODY_BYTES, MAX_SCIM_COUNT } from './scim-protocol.ts'
import { USER_URN } from './scim-user-attributes.ts'

const SPC_URN = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'
const RESOURCE_TYPE_URN = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType'
const SCHEMA_URN = 'urn:ietf:params:scim:schemas:core:2.0:Schema'

/** `GET /ServiceProviderConfig`. */
export function serviceProviderConfig(base: string, docsUrl: string): Record<string, unknown> {
  return {
    schemas: [SPC_URN],
    documentationUri: docsUrl,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_SCIM_COUNT },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'OAuth Bearer Token',
        description: "The organization's SCIM token (prefix scim_), sent as Authorization: Bearer",
        specUri: 'https://www.rfc-editor.org/info/rfc6750',
        documentationUri: docsUrl,
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
    maxPayloadSize: MAX_SCIM_BODY_BYTES,
  }
}

/** The resource types, by name. */
export function resourceTypes(base: string): Record<string, Record<string, unknown>> {
  const type = (name: string, endpoint: string, schema: string, description: string) => ({
    schemas: [RESOURCE_TYPE_URN],
    id: name,
    name,
    endpoint,
    description,
    schema,
    schemaExtensions: [],
    meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/${name}` },
  })
  return {
    User: type('User', '/Users', USER_URN, 'A person: an account and its membership of the organization'),
    Group: type('Group', '/Groups', GROUP_URN, "A team of the organization's members"),
  }
}

type Attribute = Record<string, unknown>

function attribute(name: string, options: Partial<Attribute> = {}): Attribute {
  return {
    name,
    type: 'string',
    multiValued: false,
    required: false,
    caseExact: false,
    mutability: 'readWrite',
    returned: 'default',
    uniqueness: 'none',
    ...options,
  }
}

/** The schemas, by URN. */
export function schemas(base: string): Record<string, Record<string, unknown>> {
  const schema = (id: string, name: string, description: string, attributes: Attribute[]) => ({
    schemas: [SCHEMA_URN],
    id,
    name,
    description,
    attributes,
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` },
  })
  return {
    [USER_URN]: schema(USER_URN, 'User', 'User Account', [
      attribute('userName', {
        required: true,
        uniqueness: 'server',
        mutability: 'immutable',
        description: "The person's email address; the account is found by it",
      }),
      attribute('externalId', { caseExact: true, description: "The identity provider's id for the person" }),
      attribute('name', {
        type: 'complex',
        subAttributes: [
          attribute('givenName'),
          attribute('familyName'),
          attribute('formatted', { mutability: 'readOnly' }),
        ],
      }),
      attribute('displayName'),
      attribute('emails', {
        type: 'complex',
        multiValued: true,
        subAttributes: [attribute('value'), attribute('type'), attribute('primary', { type: 'boolean' })],
      }),
      attribute('active', {
        type: 'boolean',
        description: 'False removes the membership and ends its sessions, API keys and OAuth tokens',
      }),
    ]),
    [GROUP_URN]: schema(GROUP_URN, 'Group', 'Group (a team)', [
      attribute('displayName', { required: true, uniqueness: 'server', description: "The team's name" }),
      attribute('externalId', { caseExact: true }),
      attribute('members', {
        type: 'complex',
        multiValued: true,
        subAttributes: [
          attribute('value', { mutability: 'immutable', description: 'A User id' }),
          attribute('display', { mutability: 'readOnly' }),
          attribute('type', { mutability: 'immutable', canonicalValues: ['User'] }),
          attribute('$ref', { type: 'reference', referenceTypes: ['User'], mutability: 'immutable' }),
        ],
      }),
    ]),
  }
}
