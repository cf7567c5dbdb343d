"""The embedded local stack: PostgreSQL, a Kafka-compatible broker and the service processes.

Entry points: ``python -m devstack run|infra`` (``make run``), :class:`devstack.stack.Stack`, and the
pytest fixtures in :mod:`devstack.pytest_plugin`. Kept import-free so loading the plugin stays cheap.
"""
