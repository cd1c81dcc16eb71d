-- A root that names a new online key (tidemark tuf rotate-online) waits,
-- unserved, until serve runs with that key; serve then publishes it with
-- metadata the new key signed.
alter table tuf_metadata add column pending boolean not null default false;
