-- A promote token may be limited to some channels (CONTRACT section 12:
-- `tidemark token create --channels a,b`, names or globs): an Alertmanager
-- token then cannot pin every channel. Empty: every channel.
alter table tokens add column channels text[] not null default '{}';

---- create above / drop below ----

alter table tokens drop column channels;
