-- A halt sends every cluster of a rollout back to its from version; a
-- cluster that already runs the rollout's newer version keeps it
-- (CONTRACT section 13) unless the halt was made as a rollback.
alter table rollout_events add column rollback boolean not null default false;

---- create above / drop below ----

alter table rollout_events drop column rollback;
