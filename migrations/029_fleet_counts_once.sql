-- Every batch of sightings ran two statement-level triggers over the same
-- transition tables: migration 008's fleet_count, which re-read the rows
-- through JSON, and evidence_counts (migrations 024, 025), which read every
-- column of them. fleet_keep_counts does both in one pass over the columns
-- the counters use: an upsert of 1,100 sightings of known clusters into a
-- million records (make bench-fleet's statement) cost the Postgres backend
-- 57-62 ms of CPU with the two, 47-52 ms with the one (80 statements each).
--
-- fleet_activity also counts by reported version, so the active-clusters
-- gauge (tidemark_fleet_clusters, every replica every 30 s) and the
-- admission's per-channel counts read the counters instead of grouping
-- every record: those two reads cost 335 ms of Postgres CPU a refresh over
-- a million records.
--
-- Every sighting moves last_seen, so each update writes a new entry in
-- every index of fleet. fleet_channel_served served only the rollout's
-- count of clusters on its two versions, which fleet_versions already
-- keeps, and the summary has read counters, not last_seen from
-- fleet_channel_reported: the one goes, the other loses its included
-- column: 56-66 ms a statement before, 43-50 ms after (the same measure,
-- four interleaved runs of 40 statements each).
--
-- The old functions stay (unused) so that the down migration can wire
-- them again.
drop trigger fleet_counts_insert on fleet;
drop trigger fleet_counts_update on fleet;
drop trigger fleet_counts_delete on fleet;
drop trigger fleet_evidence_insert on fleet;
drop trigger fleet_evidence_update on fleet;
drop trigger fleet_evidence_delete on fleet;

drop index fleet_channel_served;
drop index fleet_channel_reported;
create index fleet_channel_reported on fleet (channel, reported, cluster);

drop table fleet_activity;
create table fleet_activity (
	channel  text not null,
	minute   timestamptz not null,
	reported text not null,
	clusters bigint not null,
	primary key (channel, minute, reported)
);
insert into fleet_activity (channel, minute, reported, clusters)
select channel, date_trunc('minute', last_seen), reported, count(*) from fleet group by 1, 2, 3;

-- Every sighting moves last_seen, and fleet_channel_seen (channel,
-- last_seen) made every update of a record a new entry in every index of
-- fleet: the readers used it for the active window's first minute, which
-- the per-minute counts cannot answer exactly. fleet_seconds counts the
-- records by the second of their last sighting instead, with what those
-- readers group by (reported version, version directed, whether the report
-- counts, whether the record counts as evidence of its directed version,
-- and the second it was first directed it), so the window's first minute
-- is read from it, exact to the second, and the index goes. An update that
-- changes only last_seen is then heap-only (HOT: no index entries) when
-- its page has room, which fillfactor 80 leaves.
--
-- Measured in psql on a million records (the backend's CPU for one
-- 1,100-row upsert of known clusters, four interleaved runs of 40
-- statements): 43-47 ms with the index, 35-39 ms with fleet_seconds kept
-- and the index gone.
--
-- Its rows that drop to 0 are deleted with the other counters' (the
-- purge): it holds about one row per second of the last poll interval
-- and key, and one per silent cluster's.
create table fleet_seconds (
	channel  text not null,
	second   timestamptz not null,
	reported text not null,
	directed text not null,
	evidence boolean not null,
	counted  boolean not null,
	told     timestamptz not null,
	clusters bigint not null,
	primary key (channel, second, reported, directed, evidence, counted, told)
);
insert into fleet_seconds (channel, second, reported, directed, evidence, counted, told, clusters)
select f.channel, date_trunc('second', f.last_seen), f.reported, coalesce(f.directed, ''), f.evidence,
	coalesce(f.directed_since is not null and f.evidence and f.first_seen <= t.first_told, false),
	coalesce(date_trunc('second', f.directed_since), '-infinity'), count(*)
from fleet f left join evidence_told t on t.channel = f.channel and t.version = f.directed
group by 1, 2, 3, 4, 5, 6, 7;

-- fleet_keep_counts keeps fleet_versions, fleet_activity, fleet_seconds,
-- evidence_told, fleet_served, fleet_evidence and fleet_adoption from a statement's
-- transition tables, each counter table with one upsert of the summed
-- changes in key order (two replicas' batches lock counter rows in the
-- same order). First told is set first, in its own statement, so that the
-- counters' statement (a fresh snapshot) sees what a racing replica set.
create function fleet_keep_counts() returns trigger language plpgsql as $$
declare
	cols text := 'channel, reported, served, last_seen, first_seen, directed, directed_since, reported_since, evidence';
	src text := case TG_OP
		when 'INSERT' then format('select %s, 1 as n from fleet_new', cols)
		when 'DELETE' then format('select %s, -1 as n from fleet_old', cols)
		else format('select %s, 1 as n from fleet_new union all select %s, -1 from fleet_old', cols, cols) end;
begin
	-- A version's first told comes from a directed answer to a counted
	-- cluster only (or from the channel's own answer: store.MarkTold);
	-- set once, so the counters below that depend on it stay true.
	if TG_OP <> 'DELETE' then
		insert into evidence_told as t (channel, version, first_told, last_told)
		select channel, directed, min(directed_since), max(last_seen) from fleet_new
		where directed is not null and directed_since is not null and evidence
		group by 1, 2
		order by 1, 2
		on conflict (channel, version) do update set last_told = excluded.last_told
			where t.last_told < excluded.last_told - interval '1 minute';
	end if;
	execute format($q$
		with c as materialized (%s),
		v as (
			insert into fleet_versions as f (channel, kind, version, clusters)
			select channel, kind, version, sum(n) from (
				select channel, 'reported' as kind, reported as version, n from c
				union all
				select channel, 'served', served, n from c where served <> ''
			) k
			group by 1, 2, 3 having sum(n) <> 0
			order by 1, 2, 3
			on conflict (channel, kind, version) do update set clusters = f.clusters + excluded.clusters
		), act as (
			insert into fleet_activity as a (channel, minute, reported, clusters)
			select channel, date_trunc('minute', last_seen), reported, sum(n) from c
			group by 1, 2, 3 having sum(n) <> 0
			order by 1, 2, 3
			on conflict (channel, minute, reported) do update set clusters = a.clusters + excluded.clusters
		), s as (
			insert into fleet_served as s (seen, channel, served, clusters)
			select date_trunc('minute', last_seen), channel, directed, sum(n)
			from c where directed is not null and evidence
			group by 1, 2, 3 having sum(n) <> 0
			order by 1, 2, 3
			on conflict (seen, channel, served) do update set clusters = s.clusters + excluded.clusters
		), r as materialized (
			select c.channel, c.directed, c.reported, c.last_seen, c.directed_since, c.reported_since, c.n
			from c join evidence_told t on t.channel = c.channel and t.version = c.directed
			where c.directed is not null and c.evidence and c.directed_since is not null and c.first_seen <= t.first_told
		), sec as (
			insert into fleet_seconds as x (channel, second, reported, directed, evidence, counted, told, clusters)
			select c.channel, date_trunc('second', c.last_seen), c.reported, coalesce(c.directed, ''), c.evidence,
				coalesce(c.directed_since is not null and c.evidence and c.first_seen <= t.first_told, false),
				coalesce(date_trunc('second', c.directed_since), '-infinity'), sum(c.n)
			from c left join evidence_told t on t.channel = c.channel and t.version = c.directed
			group by 1, 2, 3, 4, 5, 6, 7 having sum(c.n) <> 0
			order by 1, 2, 3, 4, 5, 6, 7
			on conflict (channel, second, reported, directed, evidence, counted, told) do update set clusters = x.clusters + excluded.clusters
		), e as (
			insert into fleet_evidence as e (seen, channel, served, reported, told, clusters)
			select date_trunc('minute', last_seen), channel, directed, reported,
				case when reported = directed then '-infinity' else date_trunc('second', directed_since) end, sum(n)
			from r
			group by 1, 2, 3, 4, 5 having sum(n) <> 0
			order by 1, 2, 3, 4, 5
			on conflict (seen, channel, served, reported, told) do update set clusters = e.clusters + excluded.clusters
		)
		insert into fleet_adoption as a (channel, version, seconds, clusters)
		select channel, directed, adoption_bucket(floor(extract(epoch from reported_since - directed_since))::bigint), sum(n)
		from r where reported = directed and reported_since is not null
		group by 1, 2, 3 having sum(n) <> 0
		order by 1, 2, 3
		on conflict (channel, version, seconds) do update set clusters = a.clusters + excluded.clusters$q$, src);
	return null;
end $$;

create trigger fleet_counts_insert after insert on fleet
	referencing new table as fleet_new for each statement execute function fleet_keep_counts();
create trigger fleet_counts_update after update on fleet
	referencing old table as fleet_old new table as fleet_new for each statement execute function fleet_keep_counts();
create trigger fleet_counts_delete after delete on fleet
	referencing old table as fleet_old for each statement execute function fleet_keep_counts();
drop index fleet_channel_seen;
alter table fleet set (fillfactor = 80);

---- create above / drop below ----

drop trigger fleet_counts_delete on fleet;
drop trigger fleet_counts_update on fleet;
drop trigger fleet_counts_insert on fleet;
drop function fleet_keep_counts();
drop table fleet_seconds;
alter table fleet reset (fillfactor);
create index fleet_channel_seen on fleet (channel, last_seen);
drop index fleet_channel_reported;
create index fleet_channel_reported on fleet (channel, reported, cluster) include (last_seen);
create index fleet_channel_served on fleet (channel, served) include (last_seen);

drop table fleet_activity;
create table fleet_activity (
	channel  text not null,
	minute   timestamptz not null,
	clusters bigint not null,
	primary key (channel, minute)
);
insert into fleet_activity (channel, minute, clusters)
select channel, date_trunc('minute', last_seen), count(*) from fleet group by 1, 2;

create trigger fleet_counts_insert after insert on fleet
	referencing new table as fleet_new for each statement execute function fleet_counts_insert();
create trigger fleet_counts_update after update on fleet
	referencing old table as fleet_old new table as fleet_new for each statement execute function fleet_counts_update();
create trigger fleet_counts_delete after delete on fleet
	referencing old table as fleet_old for each statement execute function fleet_counts_delete();
create trigger fleet_evidence_insert after insert on fleet
	referencing new table as fleet_new for each statement execute function evidence_counts();
create trigger fleet_evidence_update after update on fleet
	referencing old table as fleet_old new table as fleet_new for each statement execute function evidence_counts();
create trigger fleet_evidence_delete after delete on fleet
	referencing old table as fleet_old for each statement execute function evidence_counts();
