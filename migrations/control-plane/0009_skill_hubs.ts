/**
 * Skill hubs: reusable collections of skills, assigned to members, teams or the whole
 * organization. An assignment delivers the hub's skills; an access grant (in `access_grant`)
 * decides who may see or change the hub itself.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('skill_hub')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('created_by_member_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('skill_hub_org_name_unique', ['org_id', 'name'])
    .execute()
  await db.schema.createIndex('skill_hub_org_id_idx').on('skill_hub').columns(['org_id', 'id']).execute()
  await db.schema
    .createTable('skill_hub_skill')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('hub_id', 'text', (c) => c.notNull().references('skill_hub.id').onDelete('cascade'))
    .addColumn('config_object_id', 'text', (c) => c.notNull().references('config_object.id').onDelete('cascade'))
    .addColumn('created_by_member_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('skill_hub_skill_unique', ['hub_id', 'config_object_id'])
    .execute()
  await db.schema.createIndex('skill_hub_skill_hub_idx').on('skill_hub_skill').columns(['hub_id', 'id']).execute()
  await db.schema
    .createIndex('skill_hub_skill_object_idx')
    .on('skill_hub_skill')
    .columns(['config_object_id', 'hub_id'])
    .execute()
  await db.schema
    .createTable('skill_hub_assignment')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('hub_id', 'text', (c) => c.notNull().references('skill_hub.id').onDelete('cascade'))
    .addColumn('member_id', 'text')
    .addColumn('team_id', 'text')
    .addColumn('org_wide', 'integer', (c) => c.notNull())
    .addColumn('principal_key', 'text', (c) => c.notNull())
    .addColumn('created_by_member_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('skill_hub_assignment_unique', ['hub_id', 'principal_key'])
    .execute()
  await db.schema
    .createIndex('skill_hub_assignment_hub_idx')
    .on('skill_hub_assignment')
    .columns(['hub_id', 'id'])
    .execute()
  await db.schema
    .createIndex('skill_hub_assignment_member_idx')
    .on('skill_hub_assignment')
    .columns(['org_id', 'member_id', 'hub_id'])
    .execute()
  await db.schema
    .createIndex('skill_hub_assignment_team_idx')
    .on('skill_hub_assignment')
    .columns(['org_id', 'team_id', 'hub_id'])
    .execute()
  await db.schema
    .createIndex('skill_hub_assignment_org_idx')
    .on('skill_hub_assignment')
    .columns(['org_id', 'org_wide', 'hub_id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('skill_hub_assignment').execute()
  await db.schema.dropTable('skill_hub_skill').execute()
  await db.schema.dropTable('skill_hub').execute()
}
