-- Staged rollouts (docs/rollouts.md). A rollout's progress is a pure
-- function of its row (start, steps, interval) and its events, so every
-- replica computes the same percent from the same rows.
create table rollouts (
	id            bigserial primary key,
	channel       text not null,
	-- The rollout this one superseded (null: the channel's first record).
	-- Unique per channel: two replicas that see the same change can never
	-- both start a rollout from it.
	prev_id       bigint references rollouts (id),
	-- A baseline records what the channel served when rollouts were
	-- enabled on it: the from of its first rollout, not a rollout.
	baseline      boolean not null default false,
	from_version  text not null,
	to_version    text not null,
	-- Rings earlier rollouts had reached: [{"version","percent"}], innermost first.
	carried       jsonb not null default '[]',
	steps         integer[] not null check (cardinality(steps) > 0),
	interval_ms   bigint not null check (interval_ms > 0),
	started_at    timestamptz not null,
	-- The last step whose start is audited (rollout-step/complete).
	recorded_step integer not null default 0,
	actor         text not null default '',
	reason        text not null default ''
);
create unique index rollouts_supersedes on rollouts (channel, coalesce(prev_id, 0));
create index rollouts_channel on rollouts (channel, id desc);

create table rollout_events (
	id         bigserial primary key,
	rollout_id bigint not null references rollouts (id),
	at         timestamptz not null,
	kind       text not null check (kind in ('pause', 'resume', 'advance', 'halt')),
	actor      text not null default '',
	reason     text not null default ''
);
create index rollout_events_rollout on rollout_events (rollout_id, id);

-- Every audit action on main when this was written (001's four) plus the
-- rollout's; a later migration that adds actions restates the whole list.
alter table audit drop constraint if exists audit_action_check;
alter table audit add constraint audit_action_check check (action in (
	'pin', 'unpin', 'block', 'unblock',
	'rollout-start', 'rollout-step', 'rollout-pause', 'rollout-resume',
	'rollout-advance', 'rollout-halt', 'rollout-complete'));

---- create above / drop below ----

alter table audit drop constraint if exists audit_action_check;
alter table audit add constraint audit_action_check check (action in ('pin', 'unpin', 'block', 'unblock'));
drop table rollout_events;
drop table rollouts;
