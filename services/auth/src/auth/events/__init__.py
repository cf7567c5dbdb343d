"""Auth consumes no events. It emits ``user.updated``, ``user.deleted`` and ``user.merged`` through the
outbox, from :mod:`auth.service`, in the transaction of the change they describe."""
