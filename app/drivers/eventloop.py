"""The asyncio event loop connwatch runs python-oracledb on: a listener REDIRECT can no
longer fail the logon it redirected.

python-oracledb 26.1 thin, asyncio (docs/probes.md, "Driver defects connwatch works
around"): on a listener REDIRECT (shared server through a dispatcher) the driver opens
the second TCP connection with ``loop.create_connection(lambda: self, ...)``, the SAME
protocol object as the listener's connection, and never closes the listener's
transport. When the listener then closes its end, asyncio delivers that transport's
``connection_lost`` to the shared protocol, and ``BaseAsyncProtocol.connection_lost``
(``impl/thin/protocol.pyx``) fails whatever read is pending with DPY-4011 "the database
or network closed the connection": the read of the dispatcher's reply, on a connection
that is perfectly healthy. Since python-oracledb commit fcde2d2a (January 2026) that
waiter is failed even while the connection is being established (before it, the
``_in_connect`` guard ignored it, as the method's docstring still says). Whether the
listener's FIN is processed before or after the second CONNECT is sent is a race:
1 to 67 % of redirected logons failed in a bare asyncio loop; the synchronous driver
has no callbacks and is immune.

:class:`RedirectSafeEventLoop` is an ordinary selector event loop whose
``create_connection`` notices when a protocol that already owns a transport is given a
second one, and then detaches the first (public ``BaseTransport.set_protocol`` to a
protocol that ignores everything) and closes it: the listener's late EOF, any stray
data and its ``connection_lost`` go nowhere, the driver's protocol only ever hears from
the transport it reads. Nothing of the driver is patched or replaced, and the hot path
(data on an established connection) is untouched; the cost is one dictionary lookup per
TCP connect. The agent (also the process ``connwatch serve`` starts), its worker
processes and the ad-hoc commands run on it (:func:`run`); :func:`is_redirect_safe`
tells a probe whether the loop it runs on is one.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class _Detached(asyncio.Protocol):
    """The protocol an abandoned transport is handed: it ignores everything."""

    def data_received(self, data: bytes) -> None:
        return None

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        return None


class RedirectSafeEventLoop(asyncio.SelectorEventLoop):
    """A selector event loop that detaches a protocol's previous transport when the same
    protocol object connects again (python-oracledb's listener REDIRECT); see the module."""

    def __init__(self, selector: Any = None) -> None:
        super().__init__(selector)
        # protocol -> its newest transport (weak on both sides: a transport holds its
        # protocol, so a strong value would keep every key alive)
        self._cw_latest: weakref.WeakKeyDictionary[Any, weakref.ref[asyncio.BaseTransport]] = (
            weakref.WeakKeyDictionary()
        )
        self.cw_detached = 0  # transports detached so far (tests, diagnostics)

    async def create_connection(  # type: ignore[override]
        self, protocol_factory: Callable[[], asyncio.BaseProtocol], *args: Any, **kwargs: Any
    ) -> tuple[asyncio.Transport, asyncio.BaseProtocol]:
        transport, protocol = await super().create_connection(protocol_factory, *args, **kwargs)
        self._cw_detach_previous(protocol, transport)
        return transport, protocol

    def _cw_detach_previous(
        self, protocol: asyncio.BaseProtocol, transport: asyncio.BaseTransport
    ) -> None:
        try:
            ref = self._cw_latest.get(protocol)
        except TypeError:  # a protocol that cannot be weakly referenced: not the driver's
            return
        previous = ref() if ref is not None else None
        if previous is not None and previous is not transport:
            # Runs synchronously right after the new connection is made, before the caller
            # sends anything on it: no read of the new connection can be pending yet.
            previous.set_protocol(_Detached())
            previous.close()
            self.cw_detached += 1
        self._cw_latest[protocol] = weakref.ref(transport)


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new :class:`RedirectSafeEventLoop` (a loop factory for ``asyncio.Runner``)."""
    return RedirectSafeEventLoop()


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on a :class:`RedirectSafeEventLoop`."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(main)


def is_redirect_safe(loop: asyncio.AbstractEventLoop | None = None) -> bool:
    """True when ``loop`` (default: the running one) is a :class:`RedirectSafeEventLoop`."""
    if loop is None:
        loop = asyncio.get_running_loop()
    return isinstance(loop, RedirectSafeEventLoop)
