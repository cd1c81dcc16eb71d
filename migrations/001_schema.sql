-- Tidemark's schema. Plain SQL applied by jackc/tern (store.Migrate).
-- Text columns that are "unknown" use '' rather than NULL so that the store
-- scans them into plain strings; timestamps that may not exist yet are NULL.

create table sources (
	name       text primary key,
	image      text not null,
	scheme     text not null check (scheme in ('juju', 'semver')),
	created_at timestamptz not null default now(),
	updated_at timestamptz not null default now()
);

-- One row per registry tag ever seen. Rows are never deleted: a tag that a
-- complete listing no longer has is marked present = false, so history and
-- first_seen survive a tag being removed and pushed again.
-- No foreign key to sources: its per-row check costs a third of a 10k-tag
-- first scan; ApplyScan checks (and key-share locks) the source once instead.
create table tags (
	source          text not null,
	tag             text not null,
	digest          text not null default '',
	previous_digest text not null default '',
	retagged_at     timestamptz,
	valid           boolean not null,
	error           text not null default '',
	-- The parsed version, for SQL readers (reports, ad-hoc queries); the
	-- service itself re-parses tag on load so the resolver stays the one
	-- authority on what a version is.
	major       integer,
	minor       integer,
	patch       integer,
	pre         text,
	pre_number  integer,
	prerelease  text,
	build       integer,
	build_meta  text,
	canonical   text,
	stream      text,
	first_seen  timestamptz not null,
	last_seen   timestamptz not null,
	present     boolean not null default true,
	primary key (source, tag)
) with (fillfactor = 70); -- room for HOT updates: every scan rewrites last_seen of every tag
-- Load reads only present tags; the indexer asks for present tags without a digest.
create index tags_present on tags (source) include (tag, digest) where present;
create index tags_no_digest on tags (source) where present and digest = '';
create index tags_canonical on tags (source, canonical) where valid;

create table scans (
	id        bigserial primary key,
	source    text not null references sources (name),
	started   timestamptz not null,
	finished  timestamptz,
	outcome   text not null check (outcome in ('running', 'ok', 'failed')),
	error     text not null default '',
	complete  boolean not null default false,
	tags_seen integer not null default 0,
	tags_new  integer not null default 0,
	tags_gone integer not null default 0,
	requests  integer not null default 0
);
create index scans_source on scans (source, id desc);
create index scans_source_ok on scans (source, id desc) where outcome = 'ok';

-- Channels live in configuration; this is only their mutable part. A channel
-- without a row has never been pinned (revision 0).
create table channel_state (
	channel    text primary key,
	pin        text not null default '',
	pin_digest text not null default '',
	pinned_by  text not null default '',
	pinned_at  timestamptz,
	revision   bigint not null default 0,
	updated_at timestamptz not null default now()
);

create table blocks (
	source     text not null references sources (name),
	version    text not null,
	reason     text not null default '',
	blocked_by text not null default '',
	blocked_at timestamptz not null default now(),
	primary key (source, version)
);

create table tokens (
	id         bigserial primary key,
	name       text not null unique,
	hash       bytea not null unique check (length(hash) = 32),
	scopes     text[] not null,
	created_at timestamptz not null default now(),
	last_used  timestamptz,
	revoked_at timestamptz
);

create table audit (
	id           bigserial primary key,
	at           timestamptz not null default now(),
	actor        text not null,
	action       text not null check (action in ('pin', 'unpin', 'block', 'unblock')),
	channel      text not null default '',
	source       text not null default '',
	from_version text not null default '',
	to_version   text not null default '',
	reason       text not null default ''
);
create index audit_channel on audit (channel, id desc);
create index audit_source on audit (source, id desc);

-- The audit trail is evidence; the database itself refuses to rewrite it, so
-- a bug or a hand-typed statement cannot either.
create function audit_append_only() returns trigger language plpgsql as $$
begin
	raise exception 'audit is append-only: % refused', tg_op
		using errcode = 'restrict_violation';
end
$$;
create trigger audit_no_update_delete before update or delete on audit
	for each row execute function audit_append_only();
create trigger audit_no_truncate before truncate on audit
	for each statement execute function audit_append_only();

---- create above / drop below ----

drop table audit;
drop function audit_append_only();
drop table tokens;
drop table blocks;
drop table channel_state;
drop table scans;
drop table tags;
drop table sources;
