"""Closing the Py4J connection a finished query's `foreachBatch` calls came in on (decision
1450).

In classic PySpark (Py4J's client-server mode, PySpark's default), the JVM thread that calls a
query's `foreachBatch` function, the query's stream execution thread, opens a connection of its
own to the driver's Python process, where a Python thread (`Thread-N (run)`) waits on it for the
next call. Py4J's JVM end keeps the connection in its pool once its thread has ended and never
closes it, so every query that ran a batch leaves a waiting Python thread and a socket at each
end for the life of the driver: a `fan_out` job run on a schedule in one driver gains a thread
and two sockets per table per run.

`start_query` hands the sink a `CallbackConnections` that notes the connection each call came
in on, and keeps it by query (`track`); once the query has ended, `release_ended(query)` shuts
the noted sockets down: the Python thread reads the end, closes its side and ends. The JVM's
side of the socket stays in Py4J's pool, which nothing here can reach. A query that has ended
makes no further call, so nothing waits on them. On Spark Connect the function is pickled to
a Python process of Spark's, its notes as an empty set, and nothing is noted there.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["CallbackConnections", "release", "release_ended", "track"]

_TRACKED: weakref.WeakKeyDictionary[StreamingQuery, CallbackConnections] = (
    weakref.WeakKeyDictionary()
)
_TRACKED_LOCK = threading.Lock()


class CallbackConnections:
    """The Py4J connections the JVM called one query's `foreachBatch` function on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._noted: list[Any] = []

    def __len__(self) -> int:
        with self._lock:
            return len(self._noted)

    def __reduce__(self) -> tuple[type[CallbackConnections], tuple[()]]:
        """A copy in another process starts empty: on Spark Connect the sink is pickled to
        the server's Python process, where no connection of this driver's is to be noted."""
        return (CallbackConnections, ())

    def note(self, client: Any = None) -> None:
        """Remember the connection the running call came in on; call it inside the call.

        `client` is the Py4J client the driver calls the JVM with (None: the session's);
        anything but a connection the JVM opened to this process (a Spark Connect worker, a
        call of Python's own) notes nothing.
        """
        client = _java_client() if client is None else client
        get = getattr(client, "get_thread_connection", None)  # client-server mode only
        connection = get() if callable(get) else None
        if connection is None or getattr(connection, "initiated_from_client", True):
            return
        with self._lock:
            if all(c is not connection for c in self._noted):
                self._noted.append(connection)

    def release(self) -> int:
        """Shut the noted connections' sockets down, once the query has ended; how many."""
        with self._lock:
            noted, self._noted = self._noted, []
        shut = 0
        for connection in noted:
            sock = getattr(connection, "socket", None)
            if sock is None:  # already closed
                continue
            with contextlib.suppress(OSError):  # closed meanwhile by its own thread
                sock.shutdown(socket.SHUT_RDWR)
                shut += 1
        return shut


def track(query: StreamingQuery, connections: CallbackConnections) -> None:
    """Keep `connections` with `query` until `release(query)` (or the query is dropped)."""
    with _TRACKED_LOCK:
        _TRACKED[query] = connections


def release(query: StreamingQuery) -> int:
    """Shut down the connections `query`'s `foreachBatch` calls came in on; call it once the
    query has ended. How many were shut (0 for a query never tracked)."""
    with _TRACKED_LOCK:
        connections = _TRACKED.pop(query, None)
    return 0 if connections is None else connections.release()


def release_ended(query: StreamingQuery) -> int:
    """`release(query)` once `query` is no longer active; a query still running (its wait
    was cut short) keeps its connections, as does one whose state cannot be read."""
    try:
        active = query.isActive
    except Exception:  # noqa: BLE001 - a stopped session: nothing is known, nothing is shut
        return 0
    return 0 if active else release(query)


def _java_client() -> Any:
    """The Py4J client of the driver's classic SparkContext, or None (none started here, or a
    PySpark whose internals differ: noting is a clean-up, never a reason to fail a batch)."""
    try:
        from pyspark import SparkContext

        gateway = getattr(SparkContext, "_gateway", None)
        server = gateway.get_callback_server() if gateway is not None else None
        return getattr(server, "gateway_client", None)
    except Exception:  # noqa: BLE001 - see the docstring
        return None
