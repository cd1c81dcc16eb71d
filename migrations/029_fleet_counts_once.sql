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

-- fleet_keep_counts keeps fleet_versions, fleet_activity, evidence_told,
-- fleet_served, fleet_evidence and fleet_adoption from a statement's
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

---- create above / drop below ----

drop trigger fleet_counts_delete on fleet;
drop trigger fleet_counts_update on fleet;
drop trigger fleet_counts_insert on fleet;
drop function fleet_keep_counts();
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
