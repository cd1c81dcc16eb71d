-- Promotion from evidence notifies dev.tidemark.channel.promoted.
alter table outbox drop constraint if exists outbox_type_check;
alter table outbox add constraint outbox_type_check check (type in (
	'dev.tidemark.channel.changed', 'dev.tidemark.rollout.changed',
	'dev.tidemark.version.blocked', 'dev.tidemark.risk.changed',
	'dev.tidemark.change.scheduled', 'dev.tidemark.change.pending', 'dev.tidemark.change.approved',
	'dev.tidemark.change.rejected', 'dev.tidemark.change.applied', 'dev.tidemark.change.failed',
	'dev.tidemark.change.cancelled', 'dev.tidemark.freeze.changed', 'dev.tidemark.channel.promoted'));
