-- Evidence (promotion from evidence): when a cluster was first told its
-- current answer, kept like reported_since: it starts again when the
-- answer changes. NULL for records written before, and while nothing was
-- served.
alter table fleet add column served_since timestamptz;
