/** Teams: named groups of members inside one organization, unique by name per organization. */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('team')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('team_org_name_unique', ['org_id', 'name'])
    .execute()
  await db.schema.createIndex('team_org_id_idx').on('team').columns(['org_id', 'id']).execute()

  await db.schema
    .createTable('team_member')
    .addColumn('team_id', 'text', (c) => c.notNull().references('team.id').onDelete('cascade'))
    .addColumn('member_id', 'text', (c) => c.notNull().references('member.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('team_member_pk', ['team_id', 'member_id'])
    .execute()
  await db.schema.createIndex('team_member_member_idx').on('team_member').columns(['member_id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('team_member').execute()
  await db.schema.dropTable('team').execute()
}
