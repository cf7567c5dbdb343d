from alembic import context

from bookmarks.migrate import schema
from common.migrations import run_env

run_env(url=context.config.get_main_option("sqlalchemy.url") or "", schema=schema())
