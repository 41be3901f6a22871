"""The sandbox's end of the way out: TCP on the sandbox's loopback to the proxy's unix socket.

Run inside the sandbox by the sandbox's own Python (standard library only, any Python 3)::

    python3 relay.py PORT SOCKET

It listens on ``127.0.0.1:PORT`` and pipes every connection, both ways, to the unix socket
``SOCKET`` where :class:`cvdp_gym.agents.proxy.ModelProxy` listens outside. The sandbox has
no other network: this relay is the only thing there that reaches outside, and it reaches
only the proxy.
"""

import contextlib
import socket
import sys
import threading


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _serve(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def main() -> None:
    port, path = int(sys.argv[1]), sys.argv[2]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_serve, args=(client, path), daemon=True).start()


if __name__ == "__main__":
    main()
