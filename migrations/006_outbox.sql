-- Outbound notifications (docs/webhooks.md). An event is written into the
-- outbox in the same transaction as the change it reports (a pin, an unpin,
-- a block) or, for served versions moved by indexing, by the indexing
-- leader when its snapshot changes. Rows are never updated: delivery state
-- lives per endpoint in notify_cursors, so a receiver down for an hour costs
-- one row, not one per event, and a restart resumes from the cursor.
create table outbox (
	id           bigserial primary key,
	at           timestamptz not null default now(),
	type         text not null check (type in (
		'dev.tidemark.channel.changed', 'dev.tidemark.rollout.changed', 'dev.tidemark.version.blocked')),
	channel      text not null default '',
	source       text not null default '',
	from_version text not null default '',
	to_version   text not null default '',
	actor        text not null default '',
	reason       text not null default ''
);

-- One row per configured endpoint (by name): every event with id <= last_id
-- that the endpoint wants has been delivered. The deliverer locks the row
-- (FOR UPDATE SKIP LOCKED) while it sends, so two replicas never send the
-- same event at once; a crash between sending and committing sends it
-- again (at least once).
create table notify_cursors (
	endpoint     text primary key,
	last_id      bigint not null,
	attempts     integer not null default 0,
	next_attempt timestamptz not null default now(),
	last_error   text not null default '',
	delivered_at timestamptz
);

---- create above / drop below ----

drop table notify_cursors;
drop table outbox;
