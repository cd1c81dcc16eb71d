-- The indexer re-reads the digest of every present tag every so often (24h by
-- default) to notice re-tags. When it last did so was kept in memory from
-- process start, so a re-check needed a day of uninterrupted leadership and,
-- with deploys more frequent than that, never ran. It lives here instead, so
-- it survives restarts and a change of indexing replica.
--
-- rechecked_at is when the last full digest re-check of the source finished.
-- A row starts counting when it is created (a new source's first scan reads
-- every digest anyway) and existing rows when this migration runs (their
-- next re-check is one period after the upgrade, as after any restart before).
alter table sources add column rechecked_at timestamptz not null default now();

comment on column sources.rechecked_at is
	'when the digests of every present tag were last re-read, or the row was created';

---- create above / drop below ----

alter table sources drop column rechecked_at;
