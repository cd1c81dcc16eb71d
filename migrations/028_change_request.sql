-- A change that waits for approvals is recorded as change-request, not as
-- change-schedule (which reads as if a time had been set): history says
-- what happened.
alter table audit drop constraint if exists audit_action_check;
alter table audit add constraint audit_action_check check (action in (
	'pin', 'unpin', 'block', 'unblock', 'rollback', 'risk-add', 'risk-remove',
	'rollout-start', 'rollout-step', 'rollout-pause', 'rollout-resume',
	'rollout-advance', 'rollout-halt', 'rollout-complete',
	'change-schedule', 'change-request', 'change-approve', 'change-reject', 'change-cancel', 'change-fail',
	'freeze', 'freeze-cancel', 'yank', 'hold-lift'));

---- create above / drop below ----

update audit set action = 'change-schedule' where action = 'change-request';
alter table audit drop constraint if exists audit_action_check;
alter table audit add constraint audit_action_check check (action in (
	'pin', 'unpin', 'block', 'unblock', 'rollback', 'risk-add', 'risk-remove',
	'rollout-start', 'rollout-step', 'rollout-pause', 'rollout-resume',
	'rollout-advance', 'rollout-halt', 'rollout-complete',
	'change-schedule', 'change-approve', 'change-reject', 'change-cancel', 'change-fail',
	'freeze', 'freeze-cancel', 'yank', 'hold-lift'));
