"""The operation authority: schema, migrations, lifecycle, digests, claims, projection.

`store` imports nothing from `bot`, `cards` or `workers`; payloads are opaque
canonical JSON here.
"""
