-- Yank (promotion from evidence): a version whose clusters get stuck is
-- held, so no promotion takes it, until an admin lifts the hold.
create table version_holds (
	source   text not null,
	version  text not null,
	reason   text not null,
	held_by  text not null,
	held_at  timestamptz not null default now(),
	primary key (source, version)
);

alter table audit drop constraint if exists audit_action_check;
alter table audit add constraint audit_action_check check (action in (
	'pin', 'unpin', 'block', 'unblock', 'rollback', 'risk-add', 'risk-remove',
	'rollout-start', 'rollout-step', 'rollout-pause', 'rollout-resume',
	'rollout-advance', 'rollout-halt', 'rollout-complete',
	'change-schedule', 'change-approve', 'change-reject', 'change-cancel', 'change-fail',
	'freeze', 'freeze-cancel', 'yank', 'hold-lift'));

alter table outbox drop constraint if exists outbox_type_check;
alter table outbox add constraint outbox_type_check check (type in (
	'dev.tidemark.channel.changed', 'dev.tidemark.rollout.changed',
	'dev.tidemark.version.blocked', 'dev.tidemark.risk.changed',
	'dev.tidemark.change.scheduled', 'dev.tidemark.change.pending', 'dev.tidemark.change.approved',
	'dev.tidemark.change.rejected', 'dev.tidemark.change.applied', 'dev.tidemark.change.failed',
	'dev.tidemark.change.cancelled', 'dev.tidemark.freeze.changed', 'dev.tidemark.channel.promoted',
	'dev.tidemark.version.yanked'));
