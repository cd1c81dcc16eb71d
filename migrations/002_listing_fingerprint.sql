-- A no-change rescan is every source's steady state; it should cost a
-- comparison, not a rewrite of every tag row (10,000 rows took 150-250 ms).
--
-- listing_fingerprint is a hash of the rows the source's last complete
-- listing wrote (tag names and their classification, see store/fingerprint.go);
-- NULL after an incomplete listing, whose additions no fingerprint describes.
-- When the next complete listing hashes the same, ApplyScan records the scan
-- and listed_at and touches no tag.
--
-- listed_at is when the last complete listing was read. It changes what
-- tags.last_seen means: for a present tag, the time it was last seen is
-- greatest(tags.last_seen, sources.listed_at), because every present tag was
-- in that listing or seen by a later partial one. store.Load reads it so;
-- tags.last_seen alone is only advanced when a row changes or by a partial
-- listing. For an absent tag, tags.last_seen is still exact.
alter table sources
	add column listing_fingerprint bytea,
	add column listed_at timestamptz;

comment on column sources.listing_fingerprint is
	'sha-256 of the rows of the last complete listing; NULL after an incomplete one';
comment on column sources.listed_at is
	'when the last complete listing was read';
comment on column tags.last_seen is
	'for a present tag, read greatest(last_seen, sources.listed_at); exact for an absent tag';

---- create above / drop below ----

comment on column tags.last_seen is null;
alter table sources
	drop column listing_fingerprint,
	drop column listed_at;
