from alembic import context

from common.migrations import run_env
from enrichment.migrate import schema

# A caller may compare with another schema (the tests of ``make migration``); normally the service's own.
run_env(
    url=context.config.get_main_option("sqlalchemy.url") or "",
    schema=context.config.attributes.get("schema") or schema(),
)
