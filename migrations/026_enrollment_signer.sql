-- Enrolled clusters (fleet.enrollment): a key per cluster ID, only its
-- SHA-256 kept. A revoked enrollment keeps its row (who was enrolled,
-- until when); enrolling the ID again gives it a new key.
create table cluster_enrollments (
	id         text primary key,
	hash       bytea not null unique check (length(hash) = 32),
	channels   text[] not null default '{}',
	created_at timestamptz not null default now(),
	revoked_at timestamptz
);

-- fleet.enrolled: whether the record's last request carried a valid key.
alter table fleet add column enrolled boolean not null default false;

-- The store revision: one counter every change announced to the replicas
-- moves, in the transaction that makes the change. The row lock orders the
-- counter as the commits are ordered, so a replica that has applied
-- revision N has applied every change before it.
create table store_revision (
	one boolean primary key default true check (one),
	n   bigint not null
);
insert into store_revision (n) values (0);

-- One row per signed publication (one per timestamp version): the SHA-256
-- of the publisher's sources and channels configuration and the store
-- revision its answers were computed from, which never goes down.
create table tuf_publications (
	timestamp_version bigint primary key,
	config_digest     text not null check (config_digest ~ '^[0-9a-f]{64}$'),
	store_revision    bigint not null,
	replica           text not null,
	published_at      timestamptz not null default now()
);

---- create above / drop below ----

drop table tuf_publications;
drop table store_revision;
alter table fleet drop column enrolled;
drop table cluster_enrollments;
