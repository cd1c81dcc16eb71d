-- Reports are claims; evidence exact to seconds.
--
-- directed: the last answer the channel's rule chose for the cluster (its
-- answer, a rollout's or a stepwise step, where a risk or a block steered
-- it), NULL while it has had only stays (its own reported version echoed
-- back so that it is not moved down, held, or sent somewhere unservable).
-- directed_since: when it was first directed there; it starts again when
-- the directed version changes. A stay leaves both as they were: what a
-- cluster reports is a claim about itself, so it never widens a channel's
-- served set (fleet_served), starts a version's soak (evidence_told) or
-- counts as told or adopted (fleet_evidence, fleet_adoption).
--
-- Records written before this knew no stays from directed answers: their
-- last answer is taken as directed, so that a channel pinned to an older
-- version keeps serving what its clusters were moved to.
alter table fleet add column directed text;
alter table fleet add column directed_since timestamptz;

drop trigger fleet_evidence_insert on fleet;
drop trigger fleet_evidence_update on fleet;
drop trigger fleet_evidence_delete on fleet;

update fleet set directed = served, directed_since = served_since where served <> '';

-- fleet_evidence's told was whole minutes, so a cluster counted as stuck
-- up to a minute late; it is now whole seconds (only clusters that have
-- not adopted carry one, so a settled fleet adds no rows). Its seen stays
-- whole minutes: the pass reads the window's first minute from fleet
-- itself (fleet_channel_seen), exactly, as the active count does.
create or replace function evidence_counts() returns trigger language plpgsql as $$
declare
	src text := case TG_OP
		when 'INSERT' then 'select f.*, 1 as n from fleet_new f'
		when 'DELETE' then 'select f.*, -1 as n from fleet_old f'
		else 'select f.*, 1 as n from fleet_new f union all select f.*, -1 from fleet_old f' end;
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
		with a as materialized (
			select r.channel, r.directed, r.reported, r.last_seen, r.first_seen, r.directed_since, r.reported_since, r.n
			from (%s) r where r.directed is not null and r.evidence
		), s as (
			insert into fleet_served as s (seen, channel, served, clusters)
			select date_trunc('minute', last_seen), channel, directed, sum(n)
			from a
			group by 1, 2, 3 having sum(n) <> 0
			order by 1, 2, 3
			on conflict (seen, channel, served) do update set clusters = s.clusters + excluded.clusters
		), r as materialized (
			select a.channel, a.directed, a.reported, a.last_seen, a.directed_since, a.reported_since, a.n
			from a join evidence_told t on t.channel = a.channel and t.version = a.directed
			where a.directed_since is not null and a.first_seen <= t.first_told
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

create trigger fleet_evidence_insert after insert on fleet
	referencing new table as fleet_new for each statement execute function evidence_counts();
create trigger fleet_evidence_update after update on fleet
	referencing old table as fleet_old new table as fleet_new for each statement execute function evidence_counts();
create trigger fleet_evidence_delete after delete on fleet
	referencing old table as fleet_old for each statement execute function evidence_counts();

-- The counters again, from the records as they are now.
truncate fleet_evidence, fleet_served, fleet_adoption;

insert into fleet_evidence (seen, channel, served, reported, told, clusters)
select date_trunc('minute', f.last_seen), f.channel, f.directed, f.reported,
	case when f.reported = f.directed then '-infinity' else date_trunc('second', f.directed_since) end, count(*)
from fleet f join evidence_told t on t.channel = f.channel and t.version = f.directed
where f.directed is not null and f.directed_since is not null and f.evidence and f.first_seen <= t.first_told
group by 1, 2, 3, 4, 5;

insert into fleet_served (seen, channel, served, clusters)
select date_trunc('minute', last_seen), channel, directed, count(*) from fleet
where directed is not null and evidence group by 1, 2, 3;

insert into fleet_adoption (channel, version, seconds, clusters)
select f.channel, f.directed, adoption_bucket(floor(extract(epoch from f.reported_since - f.directed_since))::bigint), count(*)
from fleet f join evidence_told t on t.channel = f.channel and t.version = f.directed
where f.directed is not null and f.reported = f.directed and f.directed_since is not null and f.reported_since is not null
	and f.evidence and f.first_seen <= t.first_told
group by 1, 2, 3;

---- create above / drop below ----

-- Down: the columns go; migration 024's evidence_counts() must be created
-- again from that file before the fleet is written.
drop trigger fleet_evidence_delete on fleet;
drop trigger fleet_evidence_update on fleet;
drop trigger fleet_evidence_insert on fleet;
alter table fleet drop column directed_since;
alter table fleet drop column directed;
