-- Placeholder: migration 025 belongs to the lead's branch (directed
-- answers). It exists here only so that 026 applies; drop this file when
-- merging the lead's 025.
select 1;
