-- One door for every change (CONTRACT section 16): a pending change keeps
-- the admin's override it was requested with (once approved it applies at
-- once, a freeze notwithstanding), and who requested and approved it as
-- identities (a person's issuer and subject, a token's name), apart from
-- the actor the audit shows.
alter table changes add column override_freeze boolean not null default false;
alter table changes add column requester_identity text not null default '';
alter table change_approvals add column actor text not null default '';
