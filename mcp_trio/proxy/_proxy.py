"""``proxy(target)``: a :class:`~mcp_trio.server.Server` that forwards everything to another MCP
server over one long-lived session (the rules: :mod:`._forwarding` and :mod:`._upstream`).

The proxy is an ordinary server: serve it over stdio, HTTP or WebSocket, mount it in another
one (``app.mount(proxy(...), prefix="x")``), test it with ``connect_server``.  Its lifespan
holds the upstream session: the first way of serving opens it, the last one closes it.  What
its clients see of it is the upstream's: its ``serverInfo`` (unless ``server_name`` is given), its
instructions, its capabilities and the protocol revision the proxy negotiated with it (the only
one the proxy speaks to its clients, so that everything passes through unchanged: see the
guide, "Revisions").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Unpack

import msgspec
import trio

from .._engine._common import _unwrap
from ..client import Client, ConnectOptions, ServesSessions, connect
from ..server import Server, add_metrics
from ..types import _versions
from ._forwarding import ASKS, Forwarding
from ._metrics import UpstreamMetrics
from ._relay import StdioRelay
from ._upstream import Upstream, Upstreams

if TYPE_CHECKING:
    from ..fuzzing.wire import Policy
    from ..server import MetricSource
    from ._validating import Validation

__all__ = ["forwarding_to", "proxy", "upstream_metrics", "validating", "validation_metrics"]

#: The client options a proxy sets itself.
_OWN = frozenset(
    {"sampling", "elicitation", "roots", "on_notification", "request_handlers", "capabilities", "cache"}
)


def _where(target: str | Sequence[str] | ServesSessions) -> str:
    if isinstance(target, str):
        return repr(target)
    if isinstance(target, Sequence):
        return repr(" ".join(target))
    if isinstance(target, Server):
        return repr(str(target.info["name"]))
    return type(target).__name__


def forwarding_to(
    target: str | Sequence[str] | ServesSessions,
    connect_options: dict[str, Any],
    *,
    offer: Sequence[str] | None,
    timeout: float | None,
    wait: float,
    backoff: float,
    max_backoff: float,
    queue_size: int,
    rename_uri: Callable[[str], str | None] | None = None,
    validation: Validation | None = None,
) -> tuple[Upstreams, Forwarding]:
    """The upstream sessions to ``target`` and the forwarding over them (not opened yet)."""
    forwarding: Forwarding | None = None
    where = _where(target)

    def make(versions: Sequence[str] | None) -> Upstream:
        """One upstream session (pinned to ``versions`` when given)."""

        def open_client(options: dict[str, Any]) -> AbstractAsyncContextManager[Client]:
            assert forwarding is not None
            handlers = dict.fromkeys(ASKS, forwarding.ask)
            options = {**options, "request_handlers": handlers, "on_notification": on_notification}
            options["capabilities"] = {
                "sampling": {},
                "elicitation": {"form": {}, "url": {}},
                "roots": {"listChanged": True},
                # (its methods, tasks/get ..., may then be forwarded; each stateless request
                # carries the capabilities of the client it is forwarded for)
                "extensions": {_versions.TASKS_EXTENSION: {}},
            }
            options["cache"] = False
            if validation is not None:
                options["wrap_channel"] = validation.channel
            elif forwarding.relay is not None:
                options["wrap_channel"] = forwarding.relay.upstream_channel
            return connect(target, **options)

        async def on_notification(method: str, params: Any) -> None:
            if _versions.is_stateless(upstream.version) and _of_a_listen_stream(params):
                return  # (of the proxy's own listen streams: queued by them, or not for its clients)
            upstream.queue_notification(method, params)

        async def on_reconnect(upstream: Upstream) -> None:
            assert forwarding is not None
            await forwarding.reconnected(upstream)

        options: dict[str, Any] = dict(connect_options)
        if versions is not None:
            options["versions"] = list(versions)
        upstream = Upstream(
            open_client,
            where,
            options,
            backoff=backoff,
            max_backoff=max_backoff,
            wait=wait,
            queue_size=queue_size,
            on_reconnect=on_reconnect,
        )
        return upstream

    upstreams = Upstreams(make, offer)
    forwarding = Forwarding(upstreams, where, timeout=timeout, rename_uri=rename_uri)
    return upstreams, forwarding


def _of_a_listen_stream(params: Any) -> bool:
    """Whether a notification's ``params`` carry the id of a ``subscriptions/listen`` stream."""
    wire = msgspec.to_builtins(params) if params is not None else None
    meta = wire.get("_meta") if isinstance(wire, dict) else None
    return isinstance(meta, dict) and _versions.SUBSCRIPTION_ID in meta


def proxy(
    target: str | Sequence[str] | ServesSessions,
    *,
    server_name: str | None = None,
    offer: Sequence[str] | None = None,
    timeout: float | None = 60.0,
    wait: float = 10.0,
    backoff: float = 0.5,
    max_backoff: float = 30.0,
    queue_size: int = 1024,
    validate: str | Policy | None = None,
    stdio_relay: bool = True,
    **connect_options: Unpack[ConnectOptions],
) -> Server:
    """A server answering every request by forwarding it to ``target`` over one session.

    Args:
        target: What :func:`~mcp_trio.client.connect` takes: a command line (a string split as
            a shell would, or a list), an ``http(s)://`` or ``ws(s)://`` URL, or a server object.
        server_name: The proxy's ``serverInfo.name`` (by default its clients see the upstream's info).
        offer: The protocol revisions the proxy offers its clients, each forwarded over an
            upstream session of its own, pinned to it (all opened at the start; those the upstream
            does not speak are left out, and logged).  By default the proxy offers the one revision
            it negotiated upstream (with ``versions``, if given).
        timeout: Seconds each forwarded request (and each ask passed to a client) may wait for
            its answer, reset by progress; past it the request is cancelled upstream and
            answered with -32603.  ``None``: no limit.
        wait: Seconds a request waits for the upstream session while it is being opened again.
        backoff: Seconds before the first reconnection after a loss (doubling after each
            failure, up to ``max_backoff``).
        queue_size: Upstream notifications that may wait to be relayed; more are dropped.
        validate: Check every message between the proxy and ``target`` with the fuzzer's
            oracles (needs the ``fuzz`` extra): a :class:`~mcp_trio.fuzzing.Policy`, or its
            text (``"log"``, ``"count,result-schema=block"``): per rule or grade, ``log``
            (a warning on ``mcp_trio.validate``), ``count`` (the metric
            ``mcp_validation_findings_total``) or ``block`` (an answer breaking it is
            replaced by -32603 naming the rule, an ask refused, a notification dropped).
        stdio_relay: Served over stdio in front of a command line, pass the plain calls
            between the pipes in OS threads, without the sessions (docs/guide/composition.md,
            "The stdio relay"; not with ``validate`` or ``offer``, nor while the proxy server
            has middleware).  ``False``: every request goes through the sessions.
        connect_options: The options of :func:`~mcp_trio.client.connect` for the upstream
            session (``versions``, ``connect_timeout``, ``http_options``, ``env`` ...), except
            those the proxy sets itself (the handlers of asks and notifications, ``capabilities``).

    Raises:
        TypeError: an option the proxy sets itself.
        ValueError: a negative duration or queue size; a ``validate`` policy naming an action
            or a rule that does not exist.
        ImportError: ``validate`` without the ``fuzz`` extra.
    """
    own = sorted(_OWN & connect_options.keys())
    if own:
        raise TypeError(
            f"proxy() sets {', '.join(own)} of the upstream client itself: the proxy's clients "
            "answer the upstream's asks and get its notifications"
        )
    for label, value in (("wait", wait), ("backoff", backoff), ("max_backoff", max_backoff)):
        if not value >= 0:
            raise ValueError(f"proxy(): {label} must be zero or more seconds, not {value!r}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"proxy(): timeout must be a positive number of seconds or None, not {timeout!r}")
    if queue_size < 1:
        raise ValueError(f"proxy(): queue_size must be at least 1, not {queue_size!r}")
    if offer is not None and (isinstance(offer, str) or not offer):
        raise ValueError("proxy(): offer takes a non-empty list of protocol revisions, e.g. ['2025-11-25']")
    validation = validating(validate)
    upstreams, forwarding = forwarding_to(
        target,
        dict(connect_options),
        offer=offer,
        timeout=timeout,
        wait=wait,
        backoff=backoff,
        max_backoff=max_backoff,
        queue_size=queue_size,
        validation=validation,
    )

    @asynccontextmanager
    async def held(server: Server) -> AsyncIterator[Upstreams]:
        try:
            async with trio.open_nursery() as nursery:
                client = await upstreams.start(nursery, forwarding.notified)
                server.versions = upstreams.versions()
                if server_name is None:
                    server.info = dict(client.server_info)
                server.instructions = client.instructions
                await forwarding.learn_tools()
                yield upstreams
                nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            raise _unwrap(group) from None

    server = Server(
        server_name or "proxy",
        lifespan=held,
        notification_handlers={"notifications/roots/list_changed": forwarding.roots_changed},
    )
    server._answer_with(forwarding)
    if stdio_relay and validation is None and offer is None:
        forwarding.relay = StdioRelay(server, upstreams, _where(target), timeout, forwarding.tally)
    add_metrics(server, upstream_metrics(server, {None: forwarding}))
    if validation is not None:
        add_metrics(server, validation_metrics(server, {None: validation}))
    return server


def _worker(server: Server) -> Callable[[], str | None]:
    """The id of the worker serving ``server`` now (None: served without a store)."""

    def worker() -> str | None:
        shared = server._totals.shared
        return None if shared is None else shared.worker

    return worker


def upstream_metrics(server: Server, forwardings: Mapping[str | None, Forwarding]) -> MetricSource:
    """The metrics of ``forwardings`` (by backend; None: a proxy's own) served by ``server``."""
    return UpstreamMetrics(forwardings, _worker(server))


def validation_metrics(server: Server, validations: Mapping[str | None, Validation]) -> MetricSource:
    """The metrics of ``validations`` (by backend; None: a proxy's own) served by ``server``."""
    from ._validating import ValidationMetrics

    return ValidationMetrics(validations, _worker(server))


def validating(validate: str | Policy | None) -> Validation | None:
    """The validation ``validate`` asks for (see :func:`proxy`), or None."""
    if validate is None:
        return None
    try:
        from ..fuzzing.wire import Policy
        from ._validating import Validation
    except ImportError as exc:  # (the fuzzer's oracles need hypothesis)
        raise ImportError(
            "validate= checks with the fuzzer's oracles, which need hypothesis: pip install 'mcp-trio[fuzz]'"
        ) from exc
    return Validation(validate if isinstance(validate, Policy) else Policy.parse(validate))
