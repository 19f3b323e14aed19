"""The socket between the checker (the worker) and a candidate host: message framing.

One AF_UNIX SOCK_SEQPACKET socketpair per host. A message travels as one or more datagrams of at
most CHUNK bytes, each starting with one byte: ``b"+"`` (more follows) or ``b"."`` (last), so a
large reply (a census of many kernels) needs no large socket buffer.

The two directions are encoded differently, on purpose:

* checker -> host: pickle. The host trusts the checker; a CUDA IPC handle travels as hex
  (cuda_ipc.py).
  File descriptors (memfds) ride along as SCM_RIGHTS on the first datagram.
* host -> checker: JSON only, at most MAX_REPLY bytes. The host runs the candidate's code, so
  what it sends is data to check, never something to unpickle; a reply that is not one JSON
  object breaks the protocol. The checker reads without room for ancillary data, so descriptors
  a host tries to pass are discarded by the kernel.
"""

from __future__ import annotations

import array
import json
import pickle
import socket
from typing import Any, List, Optional, Tuple

CHUNK = 64 * 1024
MAX_REPLY = 64 * 1024 * 1024
_MORE, _LAST = b"+", b"."


class LinkClosed(Exception):
    """The other end closed the socket."""


class ProtocolBroken(LinkClosed):
    """The other end sent something that is not a message of this protocol."""


def make_pair() -> Tuple[socket.socket, socket.socket]:
    """(checker's end, host's end)."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def _send(sock: socket.socket, payload: bytes, fds: Optional[List[int]] = None) -> None:
    n = len(payload)
    pos = 0
    first = True
    while True:
        piece = payload[pos : pos + CHUNK - 1]
        pos += len(piece)
        flag = _LAST if pos >= n else _MORE
        if first and fds:
            sock.sendmsg([flag + piece], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        else:
            sock.sendall(flag + piece)
        first = False
        if flag == _LAST:
            return


def _receive(sock: socket.socket, limit: int, want_fds: bool) -> Tuple[bytes, List[int]]:
    parts: List[bytes] = []
    fds: List[int] = []
    size = 0
    while True:
        if want_fds:
            data, anc, _, _ = sock.recvmsg(CHUNK, socket.CMSG_SPACE(16 * array.array("i").itemsize))
            for level, kind, raw in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    got = array.array("i")
                    got.frombytes(raw[: len(raw) - len(raw) % got.itemsize])
                    fds.extend(got)
        else:
            data = sock.recv(CHUNK)
        if not data:
            for fd in fds:
                _close_quietly(fd)
            raise LinkClosed("the connection closed")
        size += len(data) - 1
        if size > limit:
            raise ProtocolBroken("a message longer than %d bytes" % limit)
        parts.append(data[1:])
        if data[:1] == _LAST:
            return b"".join(parts), fds
        if data[:1] != _MORE:
            raise ProtocolBroken("a datagram without a frame marker")


def _close_quietly(fd: int) -> None:
    import os

    try:
        os.close(fd)
    except OSError:
        pass


# ---- checker's end ------------------------------------------------------------------------------


def send_request(sock: socket.socket, request: Any, fds: Optional[List[int]] = None) -> None:
    _send(sock, pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL), fds)


def receive_reply(sock: socket.socket) -> Any:
    raw, _ = _receive(sock, MAX_REPLY, want_fds=False)
    try:
        reply = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolBroken("a reply that is not JSON (%s)" % e) from None
    if not isinstance(reply, dict):
        raise ProtocolBroken("a reply that is not a JSON object")
    return reply


def drain(sock: socket.socket) -> int:
    """Discards whatever the host sent beyond its replies (it is stopped: nothing more comes)."""
    n = 0
    while True:
        try:
            data = sock.recv(CHUNK, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return n
        if not data:
            return n
        n += 1


# ---- host's end ---------------------------------------------------------------------------------


def receive_request(sock: socket.socket) -> Tuple[Any, List[int]]:
    raw, fds = _receive(sock, 1 << 40, want_fds=True)
    return pickle.loads(raw), fds


def send_reply(sock: socket.socket, reply: Any) -> None:
    _send(sock, json.dumps(reply, separators=(",", ":"), default=_plain).encode("utf-8"))


def _plain(o):
    import numbers

    if isinstance(o, numbers.Integral):
        return int(o)
    if isinstance(o, numbers.Real):
        return float(o)
    return str(o)
