"""Alembic environment: runs against the connection handed in by `blockrepo.storage.migrate`."""

from __future__ import annotations

from alembic import context

# Every model module is imported here so that autogenerate sees the whole schema.
from blockrepo.access import models as _access_models  # noqa: F401
from blockrepo.auth import models as _auth_models  # noqa: F401
from blockrepo.elements import models as _element_models  # noqa: F401
from blockrepo.massdata import models as _massdata_models  # noqa: F401
from blockrepo.metamodel import models as _metamodel_models  # noqa: F401
from blockrepo.reports import models as _report_models  # noqa: F401
from blockrepo.revisions import models as _revision_models  # noqa: F401
from blockrepo.scenarios import models as _scenario_models  # noqa: F401
from blockrepo.storage.base import Base
from blockrepo.tokens import models as _token_models  # noqa: F401
from blockrepo.webhooks import models as _webhook_models  # noqa: F401

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
