-- Outbox ids are taken when a row is inserted, not when its transaction
-- commits, so transactions commit out of id order: a deliverer reading
-- "id > last_id" skipped an event whose transaction committed after a later
-- id had been sent (issue 24). Each row now records its writer's
-- transaction id, and a deliverer reads only rows written by transactions
-- older than the oldest one still running (pg_snapshot_xmin of the current
-- snapshot): that set never grows behind the cursor, so walking it in
-- (xid, id) order skips nothing, whatever order writers commit in.
--
-- Rows written before this migration all get the migration's own xid, so
-- they keep their id order; each cursor moves onto that xid.
alter table outbox add column xid xid8 not null default pg_current_xact_id();
create index outbox_xid_id on outbox (xid, id);

alter table notify_cursors add column last_xid xid8 not null default '0';
update notify_cursors set last_xid = pg_current_xact_id() where last_id > 0;
-- The deliverer claims an event for a while (claim, next_attempt) and
-- sends it with no transaction open; the claim number says which claim a
-- result belongs to, so a replica that took over an expired claim is never
-- overwritten by the one that let it expire.
alter table notify_cursors add column claim bigint not null default 0;

---- create above / drop below ----

alter table notify_cursors drop column claim;
alter table notify_cursors drop column last_xid;
drop index outbox_xid_id;
alter table outbox drop column xid;
