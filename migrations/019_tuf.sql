-- Signed answers (The Update Framework): every version of every role's
-- metadata as signed, the target files (a channel's answer and served
-- set, by content hash), and each channel's revision, which only grows.
-- Versions only grow across leaders and restarts: each is max + 1 here.
create table tuf_metadata (
	role       text not null check (role in ('root', 'targets', 'snapshot', 'timestamp')),
	version    bigint not null check (version > 0),
	body       bytea not null,
	expires_at timestamptz not null,
	created_at timestamptz not null default now(),
	primary key (role, version)
);

create table tuf_targets (
	path       text not null,
	hash       text not null, -- sha256, hex
	body       bytea not null,
	created_at timestamptz not null default now(),
	primary key (path, hash)
);

create table tuf_channels (
	channel  text primary key,
	revision bigint not null,
	content  text not null, -- the answer and served set, for change detection
	path     text not null,
	hash     text not null,
	length   bigint not null
);
