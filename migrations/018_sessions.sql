-- Console sessions (CONTRACT section 16) live in Postgres, so that a
-- logout ends a session on every replica at once, and an idle or old one
-- ends by itself. The cookie carries a random session id, sealed with a
-- key Tidemark makes once and keeps here (never derived from the
-- configuration); the table keeps the id's hash, never the id.
create table console_sessions (
	id_hash       bytea primary key,
	identity      text not null,
	name          text not null,
	scopes        text[] not null default '{}',
	channels      text[] not null default '{}',
	refresh_token text not null default '',
	trust_until   timestamptz not null,
	created_at    timestamptz not null default now(),
	last_seen     timestamptz not null default now(),
	expires_at    timestamptz not null,
	revoked_at    timestamptz
);
create index console_sessions_expires on console_sessions (expires_at);

create table secret_keys (
	name       text primary key,
	key        bytea not null,
	created_at timestamptz not null default now()
);
