"""The enrichment worker: ``python -m enrichment.worker``.

- :mod:`enrichment.worker.attempt` — one attempt: fetch → extract → (render) → analyse.
- :mod:`enrichment.worker.runner` — N concurrent slots claiming due jobs under a lease, with heartbeats.
- :mod:`enrichment.worker.app` — the process: health, readiness and metrics endpoints, outbox relay.
"""
