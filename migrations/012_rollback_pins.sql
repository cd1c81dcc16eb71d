-- A channel never sends a cluster down (CONTRACT section 13): a cluster
-- reporting a version newer than its channel's answer keeps it, unless the
-- change that moved the channel down was made as a rollback. A pin records
-- whether it was one; an unpin clears it. Audited as action 'rollback'.
alter table channel_state add column rollback boolean not null default false;

alter table audit drop constraint if exists audit_action_check;
alter table audit add constraint audit_action_check check (action in (
	'pin', 'unpin', 'block', 'unblock', 'rollback',
	'rollout-start', 'rollout-step', 'rollout-pause', 'rollout-resume',
	'rollout-advance', 'rollout-halt', 'rollout-complete'));

---- create above / drop below ----

alter table audit drop constraint if exists audit_action_check;
alter table audit add constraint audit_action_check check (action in (
	'pin', 'unpin', 'block', 'unblock',
	'rollout-start', 'rollout-step', 'rollout-pause', 'rollout-resume',
	'rollout-advance', 'rollout-halt', 'rollout-complete'));
alter table channel_state drop column rollback;
