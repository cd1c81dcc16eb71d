-- Evidence kept incrementally. Reading it from fleet (two grouped passes
-- over a channel's records) cost 120 ms a channel over a million records
-- (make bench-evidence); these tables keep what it needs as the fleet is
-- written, by the same statement-level triggers as migration 008, so the
-- indexing leader's pass over every channel reads a few rows per
-- (channel, version, minute).
--
-- evidence_told: when each channel first told a version (stable once set:
-- the counters below depend on it) and last told it (kept to the minute).
-- fleet_evidence: clusters per (minute last seen, channel, told version,
-- reported version, minute first told it), only records that count: told
-- a version, first seen on the channel by the time it first told it, and
-- reporting from a network fleet.evidence_networks counts. Clusters
-- reporting what they were told carry '-infinity' as the minute told (it
-- only matters for stuck ones), so a settled fleet is one row per minute.
-- fleet_adoption: the same records that adopted, by seconds from first
-- told to first reporting (exact below 100 s, then to two significant
-- figures), for the adoption median.
-- fleet.evidence: whether the record's last report counts (the client's
-- address is in fleet.evidence_networks).
alter table fleet add column evidence boolean not null default true;

create table evidence_told (
	channel    text not null,
	version    text not null,
	first_told timestamptz not null,
	last_told  timestamptz not null,
	primary key (channel, version)
);

create table fleet_evidence (
	seen     timestamptz not null,
	channel  text not null,
	served   text not null,
	reported text not null,
	told     timestamptz not null,
	clusters bigint not null,
	primary key (seen, channel, served, reported, told)
);

-- fleet_served: clusters per (minute last seen, channel, version last
-- answered), every record answered a version: each channel's served set
-- keeps the versions its active clusters were last answered, and reads
-- them here every 2 s instead of from the records every 30 s.
create table fleet_served (
	seen     timestamptz not null,
	channel  text not null,
	served   text not null,
	clusters bigint not null,
	primary key (seen, channel, served)
);

create table fleet_adoption (
	channel  text not null,
	version  text not null,
	seconds  bigint not null,
	clusters bigint not null,
	primary key (channel, version, seconds)
);

-- What the indexing leader computed from them, read by every replica's API
-- and console, and its history for the adoption chart (a point when the
-- figures change, at most one a minute per version).
create table channel_evidence (
	channel      text not null,
	version      text not null,
	told         bigint not null,
	adopted      bigint not null,
	stuck        bigint not null,
	halts        bigint not null,
	first_told   timestamptz not null,
	last_told    timestamptz not null,
	adoption_p50 double precision,
	computed_at  timestamptz not null,
	primary key (channel, version)
);

create table evidence_history (
	channel text not null,
	version text not null,
	at      timestamptz not null,
	told    bigint not null,
	adopted bigint not null,
	stuck   bigint not null,
	primary key (channel, version, at)
);

create index audit_halts on audit (channel, to_version) where action = 'rollout-halt';

-- A promotion waiting for approvals is one pending change, even when two
-- replicas' loops both believe they lead for a moment.
create unique index changes_one_promotion on changes (channel, version)
	where state = 'pending' and requested_by = 'tidemark:promotion';

create function adoption_bucket(s bigint) returns bigint immutable language sql as $$
	select case when s < 100 then greatest(s, 0) else s - s % (10 ^ (length(s::text) - 2))::bigint end
$$;

-- evidence_counts keeps the counters (and fleet_served) from a statement's transition tables
-- (read directly, not through JSON as fleet_count is: this runs on every
-- batch of sightings, and parsing the rows again cost a third more than
-- the batch's write; make bench-evidence prints the share). First told is
-- set once, in its own statement, so the counters' statement (a fresh
-- snapshot) sees what a racing replica set; last told moves at most once a
-- minute. One function for the three triggers: the rows come from the
-- transition tables the operation has.
create function evidence_counts() returns trigger language plpgsql as $$
declare
	src text := case TG_OP
		when 'INSERT' then 'select f.*, 1 as n from fleet_new f'
		when 'DELETE' then 'select f.*, -1 as n from fleet_old f'
		else 'select f.*, 1 as n from fleet_new f union all select f.*, -1 from fleet_old f' end;
begin
	if TG_OP <> 'DELETE' then
		insert into evidence_told as t (channel, version, first_told, last_told)
		select channel, served, min(served_since), max(last_seen) from fleet_new
		where served <> '' and served_since is not null
		group by 1, 2
		order by 1, 2
		on conflict (channel, version) do update set last_told = excluded.last_told
			where t.last_told < excluded.last_told - interval '1 minute';
	end if;
	execute format($q$
		with a as materialized (
			select r.channel, r.served, r.reported, r.last_seen, r.first_seen, r.served_since, r.reported_since, r.evidence, r.n
			from (%s) r where r.served <> ''
		), s as (
			insert into fleet_served as s (seen, channel, served, clusters)
			select date_trunc('minute', last_seen), channel, served, sum(n)
			from a
			group by 1, 2, 3 having sum(n) <> 0
			order by 1, 2, 3
			on conflict (seen, channel, served) do update set clusters = s.clusters + excluded.clusters
		), r as materialized (
			select a.channel, a.served, a.reported, a.last_seen, a.served_since, a.reported_since, a.n
			from a join evidence_told t on t.channel = a.channel and t.version = a.served
			where a.served_since is not null and a.evidence and a.first_seen <= t.first_told
		), e as (
			insert into fleet_evidence as e (seen, channel, served, reported, told, clusters)
			select date_trunc('minute', last_seen), channel, served, reported,
				case when reported = served then '-infinity' else date_trunc('minute', served_since) end, sum(n)
			from r
			group by 1, 2, 3, 4, 5 having sum(n) <> 0
			order by 1, 2, 3, 4, 5
			on conflict (seen, channel, served, reported, told) do update set clusters = e.clusters + excluded.clusters
		)
		insert into fleet_adoption as a (channel, version, seconds, clusters)
		select channel, served, adoption_bucket(floor(extract(epoch from reported_since - served_since))::bigint), sum(n)
		from r where reported = served and reported_since is not null
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

-- The fleet recorded so far.
insert into evidence_told (channel, version, first_told, last_told)
select channel, served, min(served_since), max(last_seen) from fleet
where served <> '' and served_since is not null group by 1, 2;

insert into fleet_evidence (seen, channel, served, reported, told, clusters)
select date_trunc('minute', f.last_seen), f.channel, f.served, f.reported,
	case when f.reported = f.served then '-infinity' else date_trunc('minute', f.served_since) end, count(*)
from fleet f join evidence_told t on t.channel = f.channel and t.version = f.served
where f.served <> '' and f.served_since is not null and f.evidence and f.first_seen <= t.first_told
group by 1, 2, 3, 4, 5;

insert into fleet_served (seen, channel, served, clusters)
select date_trunc('minute', last_seen), channel, served, count(*) from fleet where served <> '' group by 1, 2, 3;

insert into fleet_adoption (channel, version, seconds, clusters)
select f.channel, f.served, adoption_bucket(floor(extract(epoch from f.reported_since - f.served_since))::bigint), count(*)
from fleet f join evidence_told t on t.channel = f.channel and t.version = f.served
where f.served <> '' and f.reported = f.served and f.served_since is not null and f.reported_since is not null
	and f.evidence and f.first_seen <= t.first_told
group by 1, 2, 3;

---- create above / drop below ----

drop trigger fleet_evidence_delete on fleet;
drop trigger fleet_evidence_update on fleet;
drop trigger fleet_evidence_insert on fleet;
drop function evidence_counts();
drop function adoption_bucket(bigint);
drop table evidence_history;
drop table channel_evidence;
drop table fleet_adoption;
drop table fleet_served;
drop table fleet_evidence;
drop table evidence_told;
drop index changes_one_promotion;
drop index audit_halts;
alter table fleet drop column evidence;
