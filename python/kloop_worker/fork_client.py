"""kloop's fork client: one worker process, started by the fork server, seen by kloop as its own.

    <python> -I -S <dir>/kloop_worker/fork_client.py SOCKET ARGV...

ARGV is the command line kloop would otherwise run (``<python> -m kloop_worker ...``). The client
hands the fork server (fork_server.py) its standard streams, its environment, its working
directory and ARGV; the server forks a child of its warm interpreter (torch already imported)
that runs the worker with exactly those; the client waits for the child's end and ends the same
way: the same exit status, or the same signal. kloop therefore sees what it would have seen from
a fresh interpreter — the same streams, events, exit code, crash signal — minus the seconds of
importing torch.

When the server does not take the job (it is not running, it refused the environment, it
closed the connection before a child started) nothing ran, and the client replaces itself with
ARGV (exec): the worker then starts the usual way. When the client is killed (kloop's timeout or
Ctrl-C), its connection closes and the server kills the child's process group.

Runs as a plain script under ``-I -S``: the standard library only, and nothing else imported —
its start costs milliseconds. fork_server.py imports the framing helpers from here.
"""

import array
import json
import os
import signal
import socket
import struct
import sys

STREAMS = (0, 1, 2)
_HEADER = struct.Struct("!I")
_MAX_MESSAGE = 1 << 24


def send_message(sock, obj, fds=()):
    """One length-prefixed JSON message; `fds` ride along with its first bytes (SCM_RIGHTS)."""
    data = json.dumps(obj).encode("utf-8")
    payload = _HEADER.pack(len(data)) + data
    if fds:
        sent = sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        payload = payload[sent:]
    if payload:
        sock.sendall(payload)


def _recv_exact(sock, n):
    chunks = []
    while n > 0:
        b = sock.recv(n)
        if not b:
            raise EOFError("connection closed mid-message")
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def recv_message(sock, max_fds=0):
    """(message, descriptors); (None, []) when the peer closed the connection first."""
    fds = []
    if max_fds:
        int_size = array.array("i").itemsize
        head, ancillary, _flags, _addr = sock.recvmsg(_HEADER.size, socket.CMSG_SPACE(max_fds * int_size))
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(array.array("i", data[: len(data) - len(data) % int_size]))
    else:
        head = sock.recv(_HEADER.size)
    if not head:
        return None, fds
    if len(head) < _HEADER.size:
        head += _recv_exact(sock, _HEADER.size - len(head))
    (n,) = _HEADER.unpack(head)
    if n > _MAX_MESSAGE:
        raise ValueError("message of %d bytes" % n)
    return json.loads(_recv_exact(sock, n).decode("utf-8")), fds


def _end_like(status):
    """Exit as the child did: its exit code, or its signal (without a core file of our own)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (ImportError, ValueError, OSError):
            pass
        sys.stdout.flush()
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal that does not end a process by default
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: fork_client.py SOCKET ARGV...\n")
        return 2
    path, worker_argv = argv[0], argv[1:]
    try:  # not dumpable: what the worker's candidate starts cannot write into the relay
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass
    sock = None
    reply = None
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        send_message(sock, {"argv": worker_argv, "env": dict(os.environ), "cwd": os.getcwd(),
                            "executable": sys.executable}, STREAMS)
        reply, _ = recv_message(sock)
    except (OSError, EOFError, ValueError):
        reply = None
    if not reply or "pid" not in reply:
        # Nothing ran: start the worker the usual way, in this process.
        if sock is not None:
            sock.close()
        os.execvp(worker_argv[0], worker_argv)
    try:
        done, _ = recv_message(sock)
    except (OSError, EOFError, ValueError):
        done = None
    if not done or "status" not in done:
        sys.stderr.write("kloop fork client: the fork server ended while the worker (pid %s) ran\n" % reply["pid"])
        return 70
    _end_like(int(done["status"]))
    return 70


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
