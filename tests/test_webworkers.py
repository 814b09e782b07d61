"""The web workers' listening sockets: TCP_NODELAY on what they accept, one socket per
worker on the shared port (SO_REUSEPORT), and connections spread over the workers."""

from __future__ import annotations

import asyncio
import socket

import pytest

from app.cli.errors import CliError
from app.cli.webworkers import tcp_listener
from app.demo.pgcluster import free_port


def _accepted_nodelay(sock: socket.socket) -> int:
    """TCP_NODELAY of a connection asyncio accepts on ``sock`` (as uvicorn serves it)."""

    async def main() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            s = writer.get_extra_info("socket")
            seen.set_result(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handler, sock=sock)
        port = sock.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        value = await asyncio.wait_for(seen, 10)
        writer.close()
        server.close()
        return value

    return asyncio.run(main())


def test_connections_accepted_on_the_listener_have_nodelay() -> None:
    assert _accepted_nodelay(tcp_listener("127.0.0.1", free_port())) == 1


def test_a_listener_without_the_tcp_protocol_number_loses_nodelay() -> None:
    # what uvicorn's own bind_socket made (proto 0): the ~40 ms per keep-alive request
    plain = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    plain.bind(("127.0.0.1", 0))
    plain.listen(8)
    assert _accepted_nodelay(plain) == 0


def test_workers_share_the_port_and_a_stranger_cannot_take_it() -> None:
    port = free_port()
    a = tcp_listener("127.0.0.1", port, reuse_port=True)
    b = tcp_listener("127.0.0.1", port, reuse_port=True)  # the second worker
    try:
        with pytest.raises(CliError, match=rf"cannot listen on 127.0.0.1:{port}"):
            tcp_listener("127.0.0.1", port)  # no SO_REUSEPORT: not one of the group
    finally:
        a.close()
        b.close()
