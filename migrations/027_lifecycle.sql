-- A fleet record says when its last answer moved the cluster off an
-- expired line (lifecycle: {upgrade_expired: true}): "expired", else ''.
-- Default '' so the records written before read as not forced.
alter table fleet add column forced text not null default '';

-- Lines crossing into deprecated or expired are announced (outbound
-- notifications, dev.tidemark.line.*): the outbox takes their types.
alter table outbox drop constraint if exists outbox_type_check;
alter table outbox add constraint outbox_type_check check (type in (
	'dev.tidemark.channel.changed', 'dev.tidemark.rollout.changed',
	'dev.tidemark.version.blocked', 'dev.tidemark.risk.changed',
	'dev.tidemark.change.scheduled', 'dev.tidemark.change.pending', 'dev.tidemark.change.approved',
	'dev.tidemark.change.rejected', 'dev.tidemark.change.applied', 'dev.tidemark.change.failed',
	'dev.tidemark.change.cancelled', 'dev.tidemark.freeze.changed', 'dev.tidemark.channel.promoted',
	'dev.tidemark.version.yanked', 'dev.tidemark.line.deprecated', 'dev.tidemark.line.expired'));
