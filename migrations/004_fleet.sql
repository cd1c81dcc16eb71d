-- The fleet (CONTRACT section 5): one row per (channel, cluster) that asked
-- a channel URL with X-SUC-Cluster-ID. Written in batches by every replica
-- (store.RecordFleet), purged after fleet.retention.
--
-- The primary key leads with channel: the cluster list pages by
-- (channel, cluster). fleet_channel_reported and fleet_channel_served carry
-- last_seen so the per-channel summary (group by version, count the active
-- ones) reads only an index; fleet_cluster finds one cluster's channels.
create table fleet (
	channel        text not null,
	cluster        text not null,
	first_seen     timestamptz not null,
	last_seen      timestamptz not null,
	reported       text not null default '',
	-- when any replica first saw this cluster report this version; NULL
	-- while it has reported none.
	reported_since timestamptz,
	served         text not null default '',
	primary key (channel, cluster)
);
create index fleet_channel_reported on fleet (channel, reported, cluster) include (last_seen);
create index fleet_channel_served on fleet (channel, served) include (last_seen);
create index fleet_cluster on fleet (cluster);

---- create above / drop below ----

drop table fleet;
