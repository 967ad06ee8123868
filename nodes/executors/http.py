"""The ``http`` node type: one HTTP request, guarded against SSRF.

Request: ``{"method", "url", "headers"?, "params"?, "json"? | "body"?}``.
Output: ``{"status_code", "headers" (lower-case names), "body"}``, the body parsed when
the response is JSON, else text, cut at WORKFLOW_HTTP_MAX_RESPONSE_BYTES (then
``"truncated": true`` is added). The whole request, body included, ends by one deadline:
the node's timeout_seconds, else WORKFLOW_HTTP_DEFAULT_TIMEOUT_SECONDS. While the
server keeps it waiting, the attempt heartbeats (executors/transport.py): a cancel closes
the connection within a heartbeat's interval and the attempt stops cancelled.
"""

from __future__ import annotations

import email.utils
import json
import math
import time
from collections.abc import Collection
from typing import Any

import httpx

from nodes import tracing
from nodes.context import NodeContext
from nodes.errors import NodeCancelled, NodeError
from nodes.executors.addresses import checked_addresses, is_host_allowed
from nodes.executors.transport import GuardedTransport
from workflows.dsl.limits import Limits, limits

#: The default of WORKFLOW_HTTP_MAX_RESPONSE_BYTES (limits.py decides at run time).
MAX_BODY_BYTES = Limits().http_max_response_bytes
ERROR_BODY_CHARS = 2048
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _invalid(message: str) -> NodeError:
    return NodeError(message, type="InvalidRequest", retryable=False)


def _build(request: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    """Validate the node's request and turn it into ``httpx.Client.stream`` arguments."""
    if not isinstance(request, dict):
        raise _invalid("request must be an object")
    method = str(request.get("method", "GET")).upper()
    if method not in METHODS:
        raise _invalid(f"unsupported HTTP method {method!r}")
    url = request.get("url")
    if not isinstance(url, str) or not url:
        raise _invalid("request.url must be a non-empty string")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise _invalid(f"invalid url: {exc}") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise _invalid("request.url must be an absolute http:// or https:// URL")

    headers = request.get("headers") or {}
    params = request.get("params") or {}
    if not isinstance(headers, dict) or not isinstance(params, dict):
        raise _invalid("request.headers and request.params must be objects")
    headers = {str(k): str(v) for k, v in headers.items()}
    if not any(k.lower() == "idempotency-key" for k in headers):
        headers["Idempotency-Key"] = ctx.idempotency_key
    if not any(k.lower() == "traceparent" for k in headers):
        tracing.inject(headers)  # the attempt's span (nodes/tracing.py), if tracing is on

    kwargs: dict[str, Any] = {"method": method, "url": parsed, "headers": headers}
    if params:
        kwargs["params"] = {
            str(k): [str(x) for x in v] if isinstance(v, list) else str(v)
            for k, v in params.items()
        }
    if "json" in request and "body" in request:
        raise _invalid("request may have json or body, not both")
    if "json" in request:
        kwargs["json"] = request["json"]
    elif "body" in request and request["body"] is not None:
        if not isinstance(request["body"], str):
            raise _invalid("request.body must be a string (use json for JSON bodies)")
        kwargs["content"] = request["body"].encode()
    return kwargs


def _read_limited(response: httpx.Response, limit: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
        if time.monotonic() > deadline:  # a caller's own client has no DeadlineStream
            raise httpx.ReadTimeout("the request's total deadline passed")
    return b"".join(chunks)[:limit]


def _decode_body(response: httpx.Response, raw: bytes, truncated: bool) -> Any:
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    is_json = content_type == "application/json" or content_type.endswith("+json")
    try:
        text = raw.decode(response.charset_encoding or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name
        text = raw.decode("utf-8", errors="replace")
    if is_json and not truncated:
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _retry_after_seconds(value: str | None) -> float | None:
    """Seconds from a Retry-After header (a number or an HTTP date), clamped into
    [0, WORKFLOW_MAX_RETRY_AFTER_SECONDS]: "inf", "1e999", far dates and negative values
    must not reach the log, where a non-finite number cannot be stored. None: unusable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
            seconds = when.timestamp() - time.time()
        except (TypeError, ValueError, OverflowError, IndexError):
            return None
    if math.isnan(seconds):
        return None
    return round(min(max(0.0, seconds), limits().max_retry_after_seconds), 3)


def _status_error(response: httpx.Response, body: str, method: str) -> NodeError:
    status = response.status_code
    retryable = status == 429 or status >= 500
    details: dict[str, Any] = {"status_code": status, "body": body[:ERROR_BODY_CHARS]}
    retry_after = _retry_after_seconds(response.headers.get("retry-after"))
    if retryable and retry_after is not None:
        details["retry_after_seconds"] = retry_after
    if 300 <= status < 400 and "location" in response.headers:
        details["location"] = response.headers["location"]
    url = response.request.url.copy_with(query=None, fragment=None)
    return NodeError(
        f"HTTP {status} from {method} {url}",
        type="HTTPStatusError",
        retryable=retryable,
        details=details,
    )


def run_http(
    request: dict[str, Any],
    ctx: NodeContext,
    *,
    success_status: tuple[int, ...] | None,
    allowed_hosts: Collection[str],
    timeout: float | None,
    client: httpx.Client | None = None,
) -> dict[str, Any]:
    """Send the node's request and return ``{"status_code", "headers", "body"}``.

    Success when the status is in ``success_status`` (default: any 2xx). Redirects are
    not followed. ``timeout`` (seconds; None: WORKFLOW_HTTP_DEFAULT_TIMEOUT_SECONDS) is a
    total deadline: connect, send, headers and the whole body. Raises NodeError: ``InvalidRequest``,
    ``ForbiddenAddress`` (never retryable), ``HTTPConnectionError`` (retryable),
    ``HTTPStatusError`` (retryable for 429 and 5xx).

    Without ``client`` the request goes through GuardedTransport, which re-checks the
    addresses it actually connects to. A caller-supplied client gets the up-front check
    only.
    """
    kwargs = _build(request, ctx)
    url: httpx.URL = kwargs["url"]
    if not is_host_allowed(url.host, allowed_hosts):
        # Refuse before any connection is attempted, with a clear error.
        port = url.port or (443 if url.scheme == "https" else 80)
        checked_addresses(url.raw_host.decode("ascii"), port, allowed_hosts)
    ctx.raise_if_cancelled()

    bounds = limits()
    seconds = bounds.http_default_timeout_seconds if timeout is None else timeout
    deadline = time.monotonic() + seconds
    own_client = client is None
    session = client or httpx.Client(
        transport=GuardedTransport(allowed_hosts, deadline, interrupt=ctx.heartbeat),
        trust_env=False,
    )
    limit = bounds.http_max_response_bytes
    try:
        with session.stream(
            **kwargs, follow_redirects=False, timeout=httpx.Timeout(seconds)
        ) as response:
            raw = _read_limited(response, limit + 1, deadline)
    except (NodeError, NodeCancelled):
        raise
    except (httpx.UnsupportedProtocol, httpx.LocalProtocolError, httpx.InvalidURL) as exc:
        raise _invalid(f"{type(exc).__name__}: {exc}") from exc
    except httpx.TransportError as exc:
        raise NodeError(
            f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
            type="HTTPConnectionError",
            retryable=True,
            details={
                "error": type(exc).__name__,
                "timeout": isinstance(exc, httpx.TimeoutException),
            },
        ) from exc
    finally:
        if own_client:
            session.close()

    truncated = len(raw) > limit
    body = _decode_body(response, raw[:limit], truncated)
    ok = (
        response.status_code in success_status
        if success_status is not None
        else 200 <= response.status_code < 300
    )
    if not ok:
        text = body if isinstance(body, str) else json.dumps(body)
        raise _status_error(response, text, kwargs["method"])
    output = {
        "status_code": response.status_code,
        "headers": {k.lower(): v for k, v in response.headers.items()},
        "body": body,
    }
    if truncated:
        output["truncated"] = True
    return output
