-- Governance (CONTRACT section 15): changes scheduled for later or
-- waiting for approvals, freezes, and the holds the leader records when a
-- channel's window closes or a freeze begins.
create table changes (
	id               bigserial primary key,
	channel          text not null,
	action           text not null check (action in ('pin', 'unpin')),
	version          text not null default '',
	reason           text not null default '',
	at               timestamptz,
	state            text not null check (state in ('scheduled', 'pending', 'done', 'failed', 'cancelled', 'rejected')),
	requested_by     text not null,
	created_at       timestamptz not null default now(),
	approvals_needed int not null default 0,
	expires_at       timestamptz,
	force            boolean not null default false,
	rollback         boolean not null default false,
	decided_at       timestamptz,
	outcome          text not null default ''
);
-- The leader's question every second: what is due?
create index changes_due on changes (at) where state = 'scheduled';
create index changes_state on changes (state, id desc);

create table change_approvals (
	change_id bigint not null references changes (id),
	identity  text not null,
	approve   boolean not null,
	at        timestamptz not null default now(),
	reason    text not null default '',
	primary key (change_id, identity)
);

create table freezes (
	id           bigserial primary key,
	channels     text[] not null,
	from_at      timestamptz not null,
	until_at     timestamptz not null check (until_at > from_at),
	reason       text not null,
	created_by   text not null,
	created_at   timestamptz not null default now(),
	cancelled_at timestamptz,
	cancelled_by text not null default ''
);

create table channel_holds (
	channel  text primary key,
	version  text not null,
	reason   text not null,
	until_at timestamptz,
	since    timestamptz not null default now()
);

alter table audit drop constraint if exists audit_action_check;
alter table audit add constraint audit_action_check check (action in (
	'pin', 'unpin', 'block', 'unblock', 'rollback', 'risk-add', 'risk-remove',
	'rollout-start', 'rollout-step', 'rollout-pause', 'rollout-resume',
	'rollout-advance', 'rollout-halt', 'rollout-complete',
	'change-schedule', 'change-approve', 'change-reject', 'change-cancel', 'change-fail',
	'freeze', 'freeze-cancel'));

alter table outbox drop constraint if exists outbox_type_check;
alter table outbox add constraint outbox_type_check check (type in (
	'dev.tidemark.channel.changed', 'dev.tidemark.rollout.changed',
	'dev.tidemark.version.blocked', 'dev.tidemark.risk.changed',
	'dev.tidemark.change.scheduled', 'dev.tidemark.change.pending', 'dev.tidemark.change.approved',
	'dev.tidemark.change.rejected', 'dev.tidemark.change.applied', 'dev.tidemark.change.failed',
	'dev.tidemark.change.cancelled', 'dev.tidemark.freeze.changed'));

---- create above / drop below ----

-- The audit keeps its events (it is append-only), so its check keeps
-- allowing them.
delete from outbox where type like 'dev.tidemark.change.%' or type = 'dev.tidemark.freeze.changed';
alter table outbox drop constraint if exists outbox_type_check;
alter table outbox add constraint outbox_type_check check (type in (
	'dev.tidemark.channel.changed', 'dev.tidemark.rollout.changed',
	'dev.tidemark.version.blocked', 'dev.tidemark.risk.changed'));
drop table channel_holds;
drop table freezes;
drop table change_approvals;
drop table changes;
