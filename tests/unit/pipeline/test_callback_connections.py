"""The Py4J connection a query's foreachBatch calls came in on is shut once the query ended.

No JVM: the JVM's end of a real Py4J client-server connection is the other end of a socket
pair, which sends the call command Py4J's protocol gives (`c`, the proxy's id, the method,
`e`), as the JVM's stream execution thread does for each micro-batch. The Python end is
py4j's own `ClientServerConnection`, started as its Python server starts one: its thread
serves the calls until its socket ends.
"""

from __future__ import annotations

import pickle
import socket
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from py4j.clientserver import ClientServerConnection, JavaClient, JavaParameters, PythonParameters
from py4j.java_gateway import GatewayProperty, PythonProxyPool
from pyspark import cloudpickle

from mssql_cdc.pipeline.callback_connections import (
    CallbackConnections,
    release,
    release_ended,
    track,
)
from mssql_cdc.pipeline.fan_out_job import FanOutJob
from mssql_cdc.pipeline.query_start import _answerable
from tests.unit.pipeline.test_fan_out_job import Query, job_of


class Sink:
    """The foreachBatch function as Py4J calls it: notes its connection, as the sink does."""

    def __init__(self, connections: CallbackConnections, client: Any) -> None:
        self.connections = connections
        self.client = client
        self.served_on: threading.Thread | None = None

    def call(self) -> None:
        self.served_on = threading.current_thread()
        self.connections.note(self.client)


@dataclass
class Link:
    jvm_end: socket.socket
    client: JavaClient
    pool: PythonProxyPool

    def call(self, obj_id: str) -> str:
        """One call of the Python object `obj_id`, as the JVM makes it; Py4J's answer."""
        self.jvm_end.sendall(f"c\n{obj_id}\ncall\ne\n".encode())
        return self.jvm_end.makefile("rb").readline().decode()

    def ended(self, timeout: float = 5.0) -> bool:
        """Whether the Python end closed its side (the JVM's reader sees the end)."""
        self.jvm_end.settimeout(timeout)
        return self.jvm_end.recv(1) == b""


@pytest.fixture
def link() -> Iterator[Link]:
    python = PythonParameters(daemonize_connections=True)
    java = JavaParameters()
    pool = PythonProxyPool()
    prop = GatewayProperty(auto_field=False, pool=pool)
    client = JavaClient(java, python, prop, deque())
    jvm_end, python_end = socket.socketpair()
    served = ClientServerConnection(java, python, prop, client)
    served.init_socket_from_python_server(python_end, python_end.makefile("rb"))
    served.start()
    yield Link(jvm_end, client, pool)
    jvm_end.close()


def test_a_finished_querys_callback_connection_is_shut_and_its_python_thread_ends(
    link: Link,
) -> None:
    connections = CallbackConnections()
    sink = Sink(connections, link.client)
    obj_id = link.pool.put(sink)
    assert link.call(obj_id) == "!yn\n"  # Py4J's answer: success, None
    assert link.call(obj_id) == "!yn\n"  # a second batch, on the same connection
    assert len(connections) == 1
    assert sink.served_on is not None
    assert sink.served_on.is_alive()

    assert connections.release() == 1
    sink.served_on.join(5)
    assert not sink.served_on.is_alive()
    assert link.ended()
    assert connections.release() == 0  # nothing left to shut


def test_without_release_the_connection_and_its_thread_stay(link: Link) -> None:
    """What the release is for: Py4J's JVM end never closes the connection, so the Python
    thread serving it would wait for ever."""
    sink = Sink(CallbackConnections(), link.client)
    assert link.call(link.pool.put(sink)) == "!yn\n"
    assert sink.served_on is not None
    sink.served_on.join(0.5)
    assert sink.served_on.is_alive()


def test_a_call_that_did_not_come_from_the_jvm_notes_nothing(link: Link) -> None:
    connections = CallbackConnections()
    connections.note(link.client)  # this thread holds no connection the JVM opened
    connections.note(object())  # a client of another mode
    connections.note()  # no classic SparkContext in this process
    assert len(connections) == 0
    assert connections.release() == 0


def test_the_sink_pickles_with_its_connections_as_spark_connect_sends_it(link: Link) -> None:
    """On Spark Connect the foreachBatch function is pickled to the server's Python process:
    its connections go as an empty set (a lock and a socket do not pickle)."""
    connections = CallbackConnections()
    sink = Sink(connections, link.client)
    assert link.call(link.pool.put(sink)) == "!yn\n"
    assert len(connections) == 1

    copy = pickle.loads(cloudpickle.dumps(_answerable(lambda df, batch_id: None, connections)))
    assert callable(copy)
    assert len(pickle.loads(pickle.dumps(connections))) == 0
    assert len(connections) == 1  # the driver's own keeps its note


class Ended(Query):
    def __init__(self, active: bool) -> None:
        super().__init__()
        if not active:
            self.ended.set()


def test_a_query_still_active_keeps_its_connections_until_it_has_ended(link: Link) -> None:
    connections = CallbackConnections()
    sink = Sink(connections, link.client)
    assert link.call(link.pool.put(sink)) == "!yn\n"
    running = Ended(active=True)
    track(running, connections)
    assert release_ended(running) == 0
    assert sink.served_on is not None
    assert sink.served_on.is_alive()

    running.ended.set()
    assert release_ended(running) == 1
    sink.served_on.join(5)
    assert not sink.served_on.is_alive()
    assert release(running) == 0  # released once


def test_a_query_never_tracked_releases_nothing() -> None:
    assert release_ended(Ended(active=False)) == 0


class Counting(CallbackConnections):
    def __init__(self) -> None:
        super().__init__()
        self.released = 0

    def release(self) -> int:
        self.released += 1
        return 0


def test_a_fan_out_job_shuts_each_ended_streams_callback_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fan_out releases a stream's connections once its query has ended: finished, failed
    or stopped."""
    noted: dict[str, Counting] = {}

    def start(app_id: str) -> Query:
        query = Query()
        track(query, noted.setdefault(app_id, Counting()))  # as start_query does
        if app_id.endswith("0"):
            query.ended.set()  # finished
        elif app_id.endswith("1"):
            query.fail(RuntimeError("boom"))
        return query

    job: FanOutJob = job_of(tmp_path, monkeypatch, start, on_failure="continue")
    while len(job.queries) < 3:
        threading.Event().wait(0.01)
    job.stop()  # the third is stopped
    assert {a: c.released for a, c in noted.items()} == {a: 1 for a in noted}
