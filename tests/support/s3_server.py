"""An S3-compatible server for the object-store tests: moto's server mode on a free port, one
bucket, fixed test keys. Shared by the unit tier (pyarrow and deltalake) and the Spark tier
(Spark's S3A connector), so both talk to a real HTTP endpoint rather than a mocked client.

`S3Server.hadoop` gives the per-bucket S3A settings (`fs.s3a.bucket.<b>.*`), which a running
Spark session takes at runtime and which leave other buckets, and so other tests, untouched.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

ACCESS_KEY = "mssql-cdc-test-access"
SECRET_KEY = "mssql-cdc-test-secret-0123456789"
REGION = "us-east-1"


@dataclass(frozen=True, slots=True)
class S3Server:
    """A running server and the bucket made for one test."""

    endpoint: str  # http://127.0.0.1:<port>
    bucket: str

    def uri(self, path: str, scheme: str = "s3a") -> str:
        return f"{scheme}://{self.bucket}/{path.lstrip('/')}"

    @property
    def hadoop(self) -> dict[str, str]:
        """The per-bucket S3A settings, as `spark.conf.set` or source options take them."""
        base = f"fs.s3a.bucket.{self.bucket}"
        return {
            f"{base}.endpoint": self.endpoint,
            f"{base}.endpoint.region": REGION,
            f"{base}.path.style.access": "true",
            f"{base}.connection.ssl.enabled": "false",
            f"{base}.access.key": ACCESS_KEY,
            f"{base}.secret.key": SECRET_KEY,
        }

    def keys(self, prefix: str = "") -> list[str]:
        """The object keys under `prefix`, listed by boto3 (not the library's pyarrow), less
        the empty folder markers (`<folder>/`) pyarrow leaves when it deletes a folder's last
        file."""
        listed = _client(self.endpoint).list_objects_v2(Bucket=self.bucket, Prefix=prefix)
        return sorted(o["Key"] for o in listed.get("Contents", []) if not o["Key"].endswith("/"))

    def get(self, key: str) -> bytes:
        body = _client(self.endpoint).get_object(Bucket=self.bucket, Key=key)["Body"]
        return bytes(body.read())

    def put(self, key: str, data: bytes) -> None:
        _client(self.endpoint).put_object(Bucket=self.bucket, Key=key, Body=data)


def _client(endpoint: str):  # type: ignore[no-untyped-def]  # boto3 ships no types
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name=REGION,
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server, once per test process, in a process of its own: deltalake's calls
    hold the GIL while they wait for HTTP, so a server thread in this process would never
    answer them."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(endpoint, server)
        yield endpoint
    finally:
        server.terminate()
        server.wait(timeout=30)


def _wait_until_up(endpoint: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"moto's server exited with {server.returncode} before it answered")
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"moto's server did not answer at {endpoint} within 60 s")


_made = [0]


@pytest.fixture
def s3(s3_endpoint: str) -> S3Server:
    """A new, empty bucket on the session's server."""
    _made[0] += 1
    bucket = f"mssql-cdc-test-{_made[0]}"
    _client(s3_endpoint).create_bucket(Bucket=bucket)
    return S3Server(s3_endpoint, bucket)
