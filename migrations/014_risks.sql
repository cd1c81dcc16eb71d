-- Known risks (CONTRACT section 13): an upgrade edge of a source that is
-- risky, for some clusters or all. Declared and removed over the API;
-- audited in every channel of the source as risk-add and risk-remove.
create table risks (
	source     text not null references sources (name),
	name       text not null,
	message    text not null,
	url        text not null default '',
	from_range text not null,
	to_range   text not null,
	clusters   text[] not null default '{}',
	created_by text not null,
	created_at timestamptz not null default now(),
	primary key (source, name)
);

alter table audit drop constraint if exists audit_action_check;
alter table audit add constraint audit_action_check check (action in (
	'pin', 'unpin', 'block', 'unblock', 'rollback', 'risk-add', 'risk-remove',
	'rollout-start', 'rollout-step', 'rollout-pause', 'rollout-resume',
	'rollout-advance', 'rollout-halt', 'rollout-complete'));

alter table outbox drop constraint if exists outbox_type_check;
alter table outbox add constraint outbox_type_check check (type in (
	'dev.tidemark.channel.changed', 'dev.tidemark.rollout.changed',
	'dev.tidemark.version.blocked', 'dev.tidemark.risk.changed'));

---- create above / drop below ----

-- The audit keeps its risk-add and risk-remove events (it is append-only),
-- so its check keeps allowing them.
delete from outbox where type = 'dev.tidemark.risk.changed';
alter table outbox drop constraint if exists outbox_type_check;
alter table outbox add constraint outbox_type_check check (type in (
	'dev.tidemark.channel.changed', 'dev.tidemark.rollout.changed',
	'dev.tidemark.version.blocked'));
drop table risks;
