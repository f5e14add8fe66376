"""A real hlsandbox on a loopback port (`hl_sandbox`) and a funded account with its agent
(`hl_wallets`)."""

from tests.support.hl_sandbox import hl_sandbox, hl_wallets  # noqa: F401  (fixtures)
