"""A small client of the grading service (httpx): ``GradingClient(url).grade(problem_id, ...)``.

A 429 (queue full) is retried after the server's ``Retry-After`` (capped by
``max_wait_s``), up to ``retries`` times; a connection error is retried the same way. Any
other non-2xx answer raises ``RequestFailed`` with the server's one-line ``detail``.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from cvdp_gym.errors import RequestFailed


class GradingClient:
    def __init__(
        self, base_url: str, *, token: str | None = None, timeout: float = 660.0, retries: int = 10, max_wait_s: float = 30.0,
        client_id: str | None = None,
    ) -> None:
        """``client_id``: this client's name for the server's per-client limit (``X-Client-Id``)."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if client_id:
            headers["X-Client-Id"] = client_id
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)
        self.retries = retries
        self.max_wait_s = max_wait_s
        #: 429s met (and waited out) so far.
        self.throttled = 0

    def __enter__(self) -> GradingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def grade(
        self, problem_id: str, *, response: str | None = None, files: dict[str, str] | None = None,
        reward: str = "shaped", deadline_s: float | None = None, seed: int | None = None,
    ) -> dict[str, Any]:
        """The verdict on one answer (``GradeAnswer`` as a dict): a model's text ``response``
        or an agent's ``files``."""
        body: dict[str, Any] = {"problem_id": problem_id, "reward": reward}
        for key, value in (("response", response), ("files", files), ("deadline_s", deadline_s), ("seed", seed)):
            if value is not None:
                body[key] = value
        return self._request("POST", "/v1/grade", json=body)

    def problems(self) -> list[dict[str, Any]]:
        return self._request("GET", "/v1/problems")["problems"]

    def health(self) -> dict[str, Any]:
        return self._request("GET", "/healthz")

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                reply = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if last:
                    raise RequestFailed(f"{method} {path}: {exc}") from None
                time.sleep(min(self.max_wait_s, 0.5 * 2**attempt))
                continue
            if reply.status_code == 429 and not last:
                self.throttled += 1
                time.sleep(min(self.max_wait_s, _retry_after(reply)))
                continue
            if reply.is_success:
                return reply.json()
            raise RequestFailed(f"{method} {path}: HTTP {reply.status_code}: {_detail(reply)}")
        raise RequestFailed(f"{method} {path}: no answer after {self.retries} retries")


def _retry_after(reply: httpx.Response) -> float:
    try:
        return max(0.0, float(reply.headers.get("retry-after", "1")))
    except ValueError:
        return 1.0


def _detail(reply: httpx.Response) -> str:
    try:
        detail = reply.json().get("detail")
    except ValueError:
        return reply.text[:200]
    return detail if isinstance(detail, str) else str(detail)[:500]
