-- Every row written into tags is written into each of its indexes too: a
-- first index of 1,000 sources x 1,000 tags (make bench-scale) spent most
-- of its database time in the COPY into tags and its four indexes. Every
-- query of the service on tags names one source, which the primary key
-- (source, tag) finds, and a source's ~1,000 rows are read whole anyway:
-- - tags_canonical served no query (SQL readers can still filter on
--   canonical within a source);
-- - tags_present and tags_no_digest only saved filtering out the few absent
--   tags, and the tags without a digest, from rows the primary key finds.
drop index tags_canonical;
drop index tags_no_digest;
drop index tags_present;

---- create above / drop below ----

create index tags_present on tags (source) include (tag, digest) where present;
create index tags_no_digest on tags (source) where present and digest = '';
create index tags_canonical on tags (source, canonical) where valid;
