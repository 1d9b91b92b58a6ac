/**
 * Wire schemas of plugins, marketplaces, skills and skill hubs.
 * @module
 */
import * as v from 'valibot'
import { SkillFileListing, SkillFilesIn } from '../../opencode/skill-wire.ts'
import { CONTAINER_STATES } from '../catalog/containers.ts'
import { pageQuery } from '../pagination.ts'
import { idOf, itemOf, nameField, pageOf, Timestamp } from './common.ts'
import {
  ConfigObject,
  DescriptionField,
  exactlyOnePrincipal,
  PrincipalFields,
  ResolvedConfigObject,
} from './config-objects.ts'

function container(prefix: string, title: string, countDescription: string) {
  return v.pipe(
    v.strictObject({
      id: idOf(prefix),
      name: v.string(),
      description: v.nullable(v.string()),
      status: v.picklist(CONTAINER_STATES),
      createdByMemberId: v.nullable(idOf('mem')),
      memberCount: v.pipe(v.number(), v.description(countDescription)),
      createdAt: Timestamp,
      updatedAt: Timestamp,
      archivedAt: v.nullable(Timestamp),
    }),
    v.title(title),
  )
}

/** A plugin. */
export const Plugin = container('plg', 'Plugin', 'Config objects in the plugin')
/** A marketplace. */
export const Marketplace = container('mkt', 'Marketplace', 'Plugins in the marketplace')
/** A page of Plugin. */
export const PluginPage = pageOf(Plugin, 'PluginPage')
/** `{item}` with one Plugin. */
export const PluginItem = itemOf(Plugin, 'PluginItem')
/** A page of Marketplace. */
export const MarketplacePage = pageOf(Marketplace, 'MarketplacePage')
/** `{item}` with one Marketplace. */
export const MarketplaceItem = itemOf(Marketplace, 'MarketplaceItem')

/** Create body of plugins, marketplaces and skill hubs. */
export const CreateContainerBody = v.strictObject({ name: nameField(255), description: v.optional(DescriptionField) })
/** Update body: at least one field. */
export const UpdateContainerBody = v.pipe(
  v.strictObject({ name: v.optional(nameField(255)), description: v.optional(DescriptionField) }),
  v.check((body) => Object.keys(body).length > 0, 'give at least one field to change'),
)
/** List query with a status filter. */
export const ContainerListQuery = v.object({
  ...pageQuery(),
  status: v.optional(v.picklist(CONTAINER_STATES, 'must be active or archived')),
})

const Membership = {
  membershipSource: v.picklist(['manual', 'api', 'connector', 'system']),
  createdByMemberId: v.nullable(idOf('mem')),
  createdAt: Timestamp,
}
/** A config object in a plugin. */
export const PluginMember = v.pipe(
  v.strictObject({
    id: idOf('pco'),
    pluginId: idOf('plg'),
    configObjectId: idOf('cob'),
    ...Membership,
    configObject: ConfigObject,
  }),
  v.title('PluginMember'),
)
/** A page of PluginMember. */
export const PluginMemberPage = pageOf(PluginMember, 'PluginMemberPage')
/** `{item}` with one PluginMember. */
export const PluginMemberItem = itemOf(PluginMember, 'PluginMemberItem')
/** Body adding a config object to a plugin. */
export const AddPluginObjectBody = v.strictObject({ configObjectId: idOf('cob') })
/** A plugin containing a config object, seen from the object. */
export const ObjectPlugin = v.pipe(
  v.strictObject({
    id: idOf('pco'),
    pluginId: idOf('plg'),
    configObjectId: idOf('cob'),
    ...Membership,
    plugin: Plugin,
  }),
  v.title('ObjectPlugin'),
)
/** A page of ObjectPlugin. */
export const ObjectPluginPage = pageOf(ObjectPlugin, 'ObjectPluginPage')
/** `{item}` with one ObjectPlugin. */
export const ObjectPluginItem = itemOf(ObjectPlugin, 'ObjectPluginItem')
/** Body adding the object to a plugin. */
export const AddObjectPluginBody = v.strictObject({ pluginId: idOf('plg') })
/** Resolved members of a plugin. */
export const ResolvedPluginPage = pageOf(ResolvedConfigObject, 'ResolvedPluginPage')

/** A plugin in a marketplace. */
export const MarketplaceEntry = v.pipe(
  v.strictObject({ id: idOf('mkp'), marketplaceId: idOf('mkt'), pluginId: idOf('plg'), ...Membership, plugin: Plugin }),
  v.title('MarketplaceEntry'),
)
/** A page of MarketplaceEntry. */
export const MarketplaceEntryPage = pageOf(MarketplaceEntry, 'MarketplaceEntryPage')
/** `{item}` with one MarketplaceEntry. */
export const MarketplaceEntryItem = itemOf(MarketplaceEntry, 'MarketplaceEntryItem')
/** Body listing a plugin in a marketplace. */
export const AddMarketplacePluginBody = v.strictObject({ pluginId: idOf('plg') })
/** A marketplace's plugins with their component counts. */
export const ResolvedMarketplacePage = pageOf(
  v.pipe(
    v.strictObject({
      plugin: Plugin,
      componentCounts: v.pipe(v.record(v.string(), v.number()), v.description('Active config objects per type')),
    }),
    v.title('ResolvedMarketplaceEntry'),
  ),
  'ResolvedMarketplacePage',
)

/** A skill: the typed view of a config object of type skill. */
export const Skill = v.pipe(
  v.strictObject({
    id: idOf('cob'),
    name: v.string(),
    description: v.string(),
    title: v.string(),
    status: v.picklist(['active', 'archived', 'deleted']),
    versionId: idOf('cov'),
    versionNumber: v.number(),
    files: v.pipe(
      v.array(SkillFileListing),
      v.description(
        'Files of the latest version beside SKILL.md (path, bytes, executable, sha256); contents in the resolved form',
      ),
    ),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  v.title('Skill'),
)
/** A page of Skill. */
export const SkillPage = pageOf(Skill, 'SkillPage')
/** `{item}` with one Skill. */
export const SkillItem = itemOf(Skill, 'SkillItem')
/** `POST /v1/skills`: a SKILL.md. */
export const CreateSkillBody = v.strictObject({
  skillMd: v.pipe(
    v.string(),
    v.maxLength(1024 * 1024),
    v.description('The full SKILL.md: frontmatter with name and description, then the body'),
  ),
  title: v.optional(nameField(255)),
  files: v.optional(
    v.pipe(
      SkillFilesIn,
      v.description('The files beside SKILL.md (`{path, contentBase64 | content, executable?, sha256?}`)'),
    ),
  ),
})

/** A skill hub. */
export const SkillHub = v.pipe(
  v.strictObject({
    id: idOf('shub'),
    name: v.string(),
    description: v.nullable(v.string()),
    skillCount: v.number(),
    createdByMemberId: v.nullable(idOf('mem')),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  v.title('SkillHub'),
)
/** A page of SkillHub. */
export const SkillHubPage = pageOf(SkillHub, 'SkillHubPage')
/** `{item}` with one SkillHub. */
export const SkillHubItem = itemOf(SkillHub, 'SkillHubItem')
/** Body adding a skill to a hub. */
export const AddHubSkillBody = v.strictObject({ skillId: idOf('cob') })
/** An assignment of a hub to a member, a team or the organization. */
export const HubAssignment = v.pipe(
  v.strictObject({
    id: idOf('sha'),
    hubId: idOf('shub'),
    memberId: v.nullable(idOf('mem')),
    teamId: v.nullable(idOf('team')),
    orgWide: v.boolean(),
    createdByMemberId: v.nullable(idOf('mem')),
    createdAt: Timestamp,
  }),
  v.title('SkillHubAssignment'),
)
/** A page of HubAssignment. */
export const HubAssignmentPage = pageOf(HubAssignment, 'SkillHubAssignmentPage')
/** `{item}` with one HubAssignment. */
export const HubAssignmentItem = itemOf(HubAssignment, 'SkillHubAssignmentItem')
/** Assignment body: exactly one of memberId, teamId or orgWide: true. */
export const AssignHubBody = v.pipe(
  v.strictObject(PrincipalFields),
  v.check((b) => exactlyOnePrincipal(b), 'give exactly one of memberId, teamId or orgWide: true'),
)

/** How a skill reaches the caller. */
export const SkillPath = v.strictObject({
  via: v.picklist(['grant', 'hub']),
  hubId: v.nullable(idOf('shub')),
  hubName: v.nullable(v.string()),
  principal: v.picklist(['member', 'team', 'organization']),
  teamId: v.nullable(idOf('team')),
})
/** A skill the caller receives, with every path that grants it. */
export const ReceivedSkill = v.pipe(
  v.strictObject({ skill: Skill, paths: v.array(SkillPath) }),
  v.title('ReceivedSkill'),
)
/** A page of ReceivedSkill. */
export const ReceivedSkillPage = pageOf(ReceivedSkill, 'ReceivedSkillPage')
