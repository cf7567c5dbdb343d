from alembic import context

from common.migrations import run_env
from enrichment.migrate import schema

run_env(url=context.config.get_main_option("sqlalchemy.url") or "", schema=schema())
