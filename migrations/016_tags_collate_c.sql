-- Tag names and source names compare byte by byte. Under the database's
-- default collation every comparison in the tags primary key goes through
-- the locale (strcoll, or ICU). scripts/bench-collation inserts 1 M rows in
-- listing order (1,000 sources x 1,000 tags) into (source, tag) keys under
-- both, interleaved, and prints the backend's CPU (2 cores, 2026-11-26, six
-- pairs): under an ICU en-US default 7.36 CPU-s mean against 4.81 under
-- "C" (every pair); under C.UTF-8 4.74 against 3.83 ("C" cheaper in five
-- pairs of six; an earlier run of six pairs: 5.68 against 5.77, no
-- difference). make bench-scale (C.UTF-8) did not move beyond its noise.
-- OCI tags are ASCII, so C.UTF-8 and "C" order them alike; under a
-- linguistic default, order by tag now follows the bytes, as Go's sort.
-- gate_checks is joined to tags on (source, tag): its key follows, so the
-- join compares under one collation and either primary key serves it.
-- Postgres rebuilds the primary keys, not the tables: 1 M tags took ~1 s
-- (150 MB table, 65 MB key), the table locked meanwhile.
alter table tags
	alter column source type text collate "C",
	alter column tag type text collate "C";
alter table gate_checks
	alter column source type text collate "C",
	alter column tag type text collate "C";

---- create above / drop below ----

alter table gate_checks
	alter column source type text collate "default",
	alter column tag type text collate "default";
alter table tags
	alter column source type text collate "default",
	alter column tag type text collate "default";
