/**
 * Delivery: plugins assigned to members, teams or the organization (like skill hubs), and what
 * each Worker receives (its own list of hubs, plugins and model providers).
 *
 * `worker_delivery.target_id` names a hub, a plugin or a provider by `kind`, so it carries no
 * foreign key: a deleted target simply stops matching (the set joins each kind to its table), and
 * the row goes with the Worker or the next `PUT /v1/workers/:id/delivery`.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('plugin_assignment')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('plugin_id', 'text', (c) => c.notNull().references('plugin.id').onDelete('cascade'))
    .addColumn('member_id', 'text')
    .addColumn('team_id', 'text')
    .addColumn('org_wide', 'integer', (c) => c.notNull())
    .addColumn('principal_key', 'text', (c) => c.notNull())
    .addColumn('created_by_member_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('plugin_assignment_unique', ['plugin_id', 'principal_key'])
    .execute()
  await db.schema
    .createIndex('plugin_assignment_plugin_idx')
    .on('plugin_assignment')
    .columns(['plugin_id', 'id'])
    .execute()
  await db.schema
    .createIndex('plugin_assignment_member_idx')
    .on('plugin_assignment')
    .columns(['org_id', 'member_id', 'plugin_id'])
    .execute()
  await db.schema
    .createIndex('plugin_assignment_team_idx')
    .on('plugin_assignment')
    .columns(['org_id', 'team_id', 'plugin_id'])
    .execute()
  await db.schema
    .createIndex('plugin_assignment_org_idx')
    .on('plugin_assignment')
    .columns(['org_id', 'org_wide', 'plugin_id'])
    .execute()
  await db.schema
    .createTable('worker_delivery')
    .addColumn('worker_id', 'text', (c) => c.notNull().references('worker.id').onDelete('cascade'))
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('worker_delivery_pk', ['worker_id', 'kind', 'target_id'])
    .execute()
  await db.schema
    .createIndex('worker_delivery_target_idx')
    .on('worker_delivery')
    .columns(['kind', 'target_id', 'worker_id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('worker_delivery').execute()
  await db.schema.dropTable('plugin_assignment').execute()
}
