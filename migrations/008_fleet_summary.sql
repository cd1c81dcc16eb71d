-- The fleet summary (GET /api/v1/fleet?channel=) counted a channel's
-- clusters by reported and by served version with two passes over its
-- index: 240 ms over a million records (make bench-fleet). These tables
-- keep the counts as the fleet is written, so the summary reads a few rows.
--
-- fleet_versions: clusters per (channel, kind, version); kind 'reported'
-- counts every cluster once (version '' while it has reported none), kind
-- 'served' only those served something.
-- fleet_activity: clusters per (channel, minute of last_seen), for the
-- active count: whole minutes after the window's start from here, the
-- window's first minute from fleet itself (fleet_channel_seen), so the
-- count is exact.
--
-- Statement-level triggers with transition tables keep them: one batch of
-- sightings (a statement of hundreds of rows) makes one upsert of the
-- summed changes per table, in key order, so two replicas' batches lock
-- counter rows in the same order. Rows that drop to 0 stay until the purge
-- (store.PurgeFleet) removes them.
create table fleet_versions (
	channel  text not null,
	kind     text not null check (kind in ('reported', 'served')),
	version  text not null,
	clusters bigint not null,
	primary key (channel, kind, version)
);

create table fleet_activity (
	channel  text not null,
	minute   timestamptz not null,
	clusters bigint not null,
	primary key (channel, minute)
);

create index fleet_channel_seen on fleet (channel, last_seen);

-- fleet_count applies changes: rows of fleet, each with n = +1 (a row as it
-- is now) or -1 (as it was), summed per counter.
create function fleet_count(changes jsonb) returns void language sql as $$
	with rows as (
		select * from jsonb_to_recordset(changes)
			as r(channel text, reported text, served text, last_seen timestamptz, n bigint)
	)
	insert into fleet_versions as f (channel, kind, version, clusters)
	select channel, kind, version, sum(n) from (
		select channel, 'reported' as kind, reported as version, n from rows
		union all
		select channel, 'served', served, n from rows where served <> ''
	) k
	group by 1, 2, 3 having sum(n) <> 0
	order by 1, 2, 3
	on conflict (channel, kind, version) do update set clusters = f.clusters + excluded.clusters;

	insert into fleet_activity as a (channel, minute, clusters)
	select channel, date_trunc('minute', last_seen), sum(n)
	from jsonb_to_recordset(changes) as r(channel text, last_seen timestamptz, n bigint)
	group by 1, 2 having sum(n) <> 0
	order by 1, 2
	on conflict (channel, minute) do update set clusters = a.clusters + excluded.clusters;
$$;

create function fleet_counts_insert() returns trigger language plpgsql as $$
begin
	perform fleet_count((select coalesce(jsonb_agg(jsonb_build_object(
		'channel', channel, 'reported', reported, 'served', served, 'last_seen', last_seen, 'n', 1)), '[]')
		from fleet_new));
	return null;
end $$;

create function fleet_counts_update() returns trigger language plpgsql as $$
begin
	perform fleet_count((select coalesce(jsonb_agg(c), '[]') from (
		select jsonb_build_object('channel', channel, 'reported', reported, 'served', served, 'last_seen', last_seen, 'n', 1) as c from fleet_new
		union all
		select jsonb_build_object('channel', channel, 'reported', reported, 'served', served, 'last_seen', last_seen, 'n', -1) from fleet_old) u));
	return null;
end $$;

create function fleet_counts_delete() returns trigger language plpgsql as $$
begin
	perform fleet_count((select coalesce(jsonb_agg(jsonb_build_object(
		'channel', channel, 'reported', reported, 'served', served, 'last_seen', last_seen, 'n', -1)), '[]')
		from fleet_old));
	return null;
end $$;

create trigger fleet_counts_insert after insert on fleet
	referencing new table as fleet_new for each statement execute function fleet_counts_insert();
create trigger fleet_counts_update after update on fleet
	referencing old table as fleet_old new table as fleet_new for each statement execute function fleet_counts_update();
create trigger fleet_counts_delete after delete on fleet
	referencing old table as fleet_old for each statement execute function fleet_counts_delete();

-- The fleet recorded so far.
insert into fleet_versions (channel, kind, version, clusters)
select channel, 'reported', reported, count(*) from fleet group by 1, 3;
insert into fleet_versions (channel, kind, version, clusters)
select channel, 'served', served, count(*) from fleet where served <> '' group by 1, 3;
insert into fleet_activity (channel, minute, clusters)
select channel, date_trunc('minute', last_seen), count(*) from fleet group by 1, 2;

---- create above / drop below ----

drop trigger fleet_counts_delete on fleet;
drop trigger fleet_counts_update on fleet;
drop trigger fleet_counts_insert on fleet;
drop function fleet_counts_delete();
drop function fleet_counts_update();
drop function fleet_counts_insert();
drop function fleet_count(jsonb);
drop index fleet_channel_seen;
drop table fleet_activity;
drop table fleet_versions;
