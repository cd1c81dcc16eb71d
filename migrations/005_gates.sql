-- Release gates (issue 16): what the registry said about each tag's
-- platforms and cosign signature, so that a rescan asks again only about
-- what may have changed (a new digest, a version still held), and every
-- replica serves the same gate state. The soak gate needs no row: it runs
-- from tags.first_seen.
--
-- One row per tag, replaced on every check. digest is the digest checked:
-- after a re-tag the row describes the old image and counts for nothing
-- until the new digest is checked. platforms and key_id are the
-- configuration the check was made with, so a platform added or a key
-- rotated holds the version until it is checked again (resolver.GateChecks.For).
-- No foreign key to tags, as tags has none to sources: rows are few and
-- written by the indexer only.
create table gate_checks (
	source            text not null,
	tag               text not null,
	digest            text not null,
	platforms         text[] not null default '{}',
	missing_platforms text[] not null default '{}',
	key_id            text not null default '',
	signature         text not null default '' check (signature in ('', 'ok', 'missing', 'invalid')),
	signature_reason  text not null default '',
	checked_at        timestamptz not null,
	primary key (source, tag)
);

comment on column gate_checks.signature is
	'ok | missing | invalid; empty when the source had no signature gate at the check';

---- create above / drop below ----

drop table gate_checks;
