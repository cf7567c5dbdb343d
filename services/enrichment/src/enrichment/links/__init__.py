"""Link health (docs/api-guide.md, section 15): the check queue, its use cases and the check-now route.

The rules are pure (:mod:`enrichment.domain.links`); the checker loop runs in the worker
(:mod:`enrichment.worker.links`).
"""
