"""PostgreSQL: revision numbers from a sequence, and the committed horizon readers of history stop at

Writes took their revision number from `repository_state.revision` under its row lock, held until the
commit, so all writes queued behind one row. From now on a write on PostgreSQL takes its number from
`revision_id_seq` when it flushes, and claims it with a transaction-level advisory lock (namespace
`storage.transactions.REVISION_CLAIMS`, the number as key) in the same statement; writers overlap their
commits. `blockrepo_revision_horizon()` gives the highest revision below which every claimed number is
final (committed or rolled back): see `revisions.repository.visible_revision` for why it is gap-free.
SQLite keeps its counter (one writer at a time anyway).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# Locks are listed for the whole cluster: only this database's count (a database cloned from a template
# has the same sequence oid). A backend that has called nextval (it holds RowExclusiveLock on the
# sequence until its transaction ends) but holds no claim yet is between the two halves of its claiming
# statement: its number is unknown, so the horizon is read again (the window is one statement's
# execution). Returning the sequence's value read BEFORE the locks, capped below the
# oldest claim, is what makes every number at or below the answer final: a writer whose number is at
# most that value had called nextval before the locks were read, so it held the sequence's lock then and
# either its claim showed (it is still running: the answer stays below it) or it had finished.
_HORIZON = """
CREATE FUNCTION blockrepo_revision_horizon() RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    handed_out bigint;
    called boolean;
    oldest bigint;
    unknown boolean;
    here oid := (SELECT oid FROM pg_database WHERE datname = current_database());
BEGIN
    LOOP
        SELECT last_value, is_called INTO handed_out, called FROM revision_id_seq;
        IF NOT called THEN
            handed_out := handed_out - 1;
        END IF;
        WITH held AS MATERIALIZED (
            SELECT pid, locktype, objid FROM pg_locks
            WHERE granted AND pid IS NOT NULL AND pid <> pg_backend_pid() AND database = here AND (
                (locktype = 'advisory' AND classid = 7404 AND objsubid = 2)
                OR (locktype = 'relation' AND relation = 'revision_id_seq'::regclass
                    AND mode = 'RowExclusiveLock')
            )
        )
        SELECT
            (SELECT min(objid::bigint) FROM held WHERE locktype = 'advisory'),
            EXISTS (
                SELECT 1 FROM held AS s WHERE s.locktype = 'relation' AND NOT EXISTS (
                    SELECT 1 FROM held AS c WHERE c.locktype = 'advisory' AND c.pid = s.pid
                )
            )
        INTO oldest, unknown;
        IF NOT unknown THEN
            RETURN least(handed_out, coalesce(oldest - 1, handed_out));
        END IF;
        PERFORM pg_sleep(0.0001);
    END LOOP;
END
$$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE SEQUENCE revision_id_seq AS integer MINVALUE 1 START 1 CACHE 1")
    op.execute(
        "SELECT setval('revision_id_seq', greatest((SELECT coalesce(max(id), 0) FROM revision),"
        " (SELECT coalesce(max(revision), 0) FROM repository_state)) + 1, false)"
    )
    op.execute(_HORIZON)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "UPDATE repository_state"
        " SET revision = greatest(revision, (SELECT coalesce(max(id), 0) FROM revision))"
    )
    op.execute("DROP FUNCTION blockrepo_revision_horizon()")
    op.execute("DROP SEQUENCE revision_id_seq")
