"""What every client of the service holds: its transport, made from the
arguments or the environment, and the connections' lifecycle."""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

from saver_client._http import Timeout
from saver_client._transport import RetryPolicy, Transport
from saver_client._version import __version__

URL_ENV = "SAVER_URL"
API_KEY_ENV = "SAVER_API_KEY"


def make_transport(
    owner: str,
    url: str | None,
    *,
    api_key: str | None,
    headers: Mapping[str, str] | None,
    timeout: float | Timeout,
    retry: RetryPolicy | None,
) -> Transport:
    """The transport of a client of the service (HTTPSaver, HTTPStore): the
    URL and key from the arguments or the environment, checked."""
    base_url = url or os.environ.get(URL_ENV)
    if not base_url:
        raise ValueError(f"{owner} needs the service URL: pass url= or set {URL_ENV}")
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {base_url!r}")
    all_headers = {"User-Agent": f"saver-client/{__version__}"}
    api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
    if api_key:
        all_headers["Authorization"] = f"Bearer {api_key}"
    all_headers.update(headers or {})
    return Transport(
        base_url.rstrip("/"),
        headers=all_headers,
        timeout=Timeout.of(timeout),
        retry=retry or RetryPolicy(),
    )


class ServiceClient:
    """The lifecycle HTTPSaver and HTTPStore share: the service's URL, and
    the connections released by `close()` / `aclose()` or a `with` block.
    The client reconnects if it is used again."""

    _transport: Transport

    @property
    def url(self) -> str:
        """The service's base URL."""
        return self._transport.base_url

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def close(self) -> None:
        """Release connections. The client reconnects if it is used again."""
        self._transport.close()

    async def aclose(self) -> None:
        """Release connections, closing the running loop's pool cleanly."""
        await self._transport.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
