"""Route of the backup (blockrepo's own, API.md section 11): the whole repository as `blockrepo backup`
writes it, for supervisors. Restoring stays on the command line: it replaces a database under every
instance that serves it, which no request of one instance can do safely."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import IO, Annotated

from fastapi import APIRouter, Depends
from starlette.responses import StreamingResponse

from blockrepo.api.context import RequestContext, read_context
from blockrepo.api.problem_docs import problem_responses
from blockrepo.backup.service import MEDIA_TYPE, require_supervisor, write_backup

router = APIRouter(tags=["operations"])
CHUNK_BYTES = 1 << 16


@router.get(
    "/api/backup",
    operation_id="backupRepository",
    summary="Back up the whole repository",
    description="The whole repository from one snapshot, in the file format `blockrepo backup` writes and "
    "`blockrepo restore` reads (gzip-compressed JSON lines): metamodel, elements, relations, the whole "
    "history with its revisions, users with their password hashes, roles and permissions, API tokens (as "
    "keyed hashes), webhooks and the server secret; not sessions. Supervisors only (a supervisor's token "
    "counts only without restrictions: a nightly job can use one): the file holds secrets, so keep it as "
    "safe as the database. The snapshot is written to a temporary file before the first byte is sent, "
    "so a slow download holds no snapshot open. Not part of LUY 7.4 (API.md section 11).",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The backup file",
            "content": {MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}},
        },
        **problem_responses(401, 403),
    },
)
def backup_repository(ctx: Annotated[RequestContext, Depends(read_context)]) -> StreamingResponse:
    require_supervisor(ctx.actor)
    # Closed by the stream that sends it (or here, if the backup fails).
    spool = tempfile.TemporaryFile()  # noqa: SIM115
    try:
        summary = write_backup(ctx.services.engine, spool)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    name = f"blockrepo-backup-r{summary.revision}.jsonl.gz"
    return StreamingResponse(
        _chunks(spool),
        media_type=MEDIA_TYPE,
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


def _chunks(spool: IO[bytes]) -> Iterator[bytes]:
    with spool:
        while chunk := spool.read(CHUNK_BYTES):
            yield chunk
