-- Placeholder: migration 026 belongs to i51b's branch (enrollment and the
-- signer). It exists here only so that 027 applies; drop this file when
-- merging i51b's 026.
select 1;
