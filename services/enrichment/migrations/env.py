from alembic import context

from common.migrations import run_env

run_env(url=context.config.get_main_option("sqlalchemy.url") or "")
