"""A small client for the bot's HTTP API, used by the CLI."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp


@dataclass(frozen=True)
class ApiError(Exception):
    status: int
    code: str
    message: str
    fields: tuple[dict[str, str], ...] = ()

    def __str__(self) -> str:
        lines = [f"{self.code}: {self.message} (HTTP {self.status})"]
        lines += [f"  {f['field']}: {f['reason']}: {f['fix']}" for f in self.fields]
        return "\n".join(lines)


@dataclass(frozen=True)
class ApiReply:
    status: int
    body: Any


class ApiClient:
    def __init__(self, base_url: str, token: str, timeout_s: float = 90.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)

    async def _call(
        self,
        method: str,
        path: str,
        *,
        data: bytes | None = None,
        params: dict[str, str] | None = None,
    ) -> ApiReply:
        headers = dict(self._headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        try:
            async with (
                aiohttp.ClientSession(timeout=self._timeout) as session,
                session.request(
                    method, self.base_url + path, data=data, params=params, headers=headers
                ) as response,
            ):
                body = await response.json(content_type=None)
        except aiohttp.ClientConnectionError as error:
            raise ApiError(0, "unreachable", f"cannot reach {self.base_url} ({error})") from None
        except ValueError:
            raise ApiError(0, "bad_response", f"{self.base_url} did not answer with JSON") from None
        if response.status >= 400:
            detail = (body or {}).get("error", {}) if isinstance(body, dict) else {}
            raise ApiError(
                response.status,
                str(detail.get("code", "http_error")),
                str(detail.get("message", response.reason)),
                tuple(detail.get("fields", ())),
            )
        return ApiReply(response.status, body)

    async def propose(self, body: bytes) -> ApiReply:
        return await self._call("POST", "/api/v1/operations", data=body)

    async def show(
        self, operation_id: str, wait_s: int | None = None, until: str | None = None
    ) -> ApiReply:
        """The operation; with `wait_s`, once it is what `until` asks (the API's default:
        changed) or after that many seconds (at most the API's 60 per ask)."""
        params = {
            key: str(value)
            for key, value in (("wait_s", wait_s), ("until", until))
            if value is not None
        }
        return await self._call("GET", f"/api/v1/operations/{operation_id}", params=params)

    async def list(self, state: str | None, limit: int | None, cursor: str | None) -> ApiReply:
        params = {
            key: str(value)
            for key, value in (("state", state), ("limit", limit), ("cursor", cursor))
            if value is not None
        }
        return await self._call("GET", "/api/v1/operations", params=params)

    async def cancel(self, operation_id: str) -> ApiReply:
        return await self._call("POST", f"/api/v1/operations/{operation_id}/cancel")
