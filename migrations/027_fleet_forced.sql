-- A fleet record says when its last answer moved the cluster off an
-- expired line (lifecycle: {upgrade_expired: true}): "expired", else ''.
-- Default '' so the records written before read as not forced.
alter table fleet add column forced text not null default '';
