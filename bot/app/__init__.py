"""The composition root: `run` and `worker` (the store, HTTP app, Lark transports, consumers and workers built and wired), the worker child, logging, and the local stack (`sandbox`, `demo`)."""
