"""The object-store mode of ``bench replay`` (``--store s3``): tables on s3proxy, read over S3.

A real S3-compatible server (s3proxy, ``scripts/s3proxy.sh``) on 127.0.0.1 with cloud-like
latency (list 30 ms, get 15 ms, metadata 10 ms per request by default) serves the cached
synthetic tables; every reader reads them through its own S3 client: the Spark readers through
S3A (hadoop-aws and the AWS SDK v2 modules, ``scripts/s3proxy.sh s3a-jars``), delta-rs through
its object store with an endpoint override over plain http.

Placement: s3proxy's ``filesystem-nio2`` backend keeps an object as the file
``<basedir>/<bucket>/<key>`` and follows symbolic links, so a table goes into the bucket as one
symlink to its cached directory (sizes, modification times and listings are those of the files
behind it). Hard links would not do: the synthetic data files are already hard links to a few
sources at up to 60,000 links each, near ext4's limit of about 65,000. What the backend does
need is an ETag: it serves the MD5 stored in the file's ``user.user.content-md5`` extended
attribute (written when an object is PUT), and S3A's analytics input stream refuses an object
without one, so :func:`tag_etags` writes that attribute once per file (per inode: the hard
links share it).

Requests are counted from the server's request log (``LOG_LEVEL=debug``: one ``request:`` line
per HTTP request as it arrives), so every reader, delta-rs included, is counted the same way:
LIST (a GET on the bucket), HEAD, GET of an object, and writes (PUT, POST, DELETE).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

STORES = ("s3",)
BUCKET = "delta-replay-bench"
CLOUD_LATENCY = "list=30,get=15,metadata=10"
_ETAG_XATTR = "user.user.content-md5"  # filesystem-nio2: user metadata "content-md5"
_TAGGED = "_s3_etags_done"  # marks a table whose files all carry an ETag attribute


def repo_root() -> Path:
    """The source checkout (the store mode needs its ``scripts/s3proxy.sh``)."""
    env = os.environ.get("DELTA_REPLAY_ROOT")
    root = Path(env) if env else Path(__file__).resolve().parents[3]
    if not (root / "scripts" / "s3proxy.sh").is_file():
        raise FileNotFoundError(
            f"scripts/s3proxy.sh not found under {root}: the object-store mode runs from a "
            "source checkout (or set DELTA_REPLAY_ROOT to one)"
        )
    return root


def _script(*args: str, env: dict[str, str] | None = None) -> str:
    cmd = [str(repo_root() / "scripts" / "s3proxy.sh"), *args]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}:\n{proc.stderr}")
    return proc.stdout


def s3a_jars() -> list[str]:
    """The S3A client jars (fetched once by Maven through ``scripts/s3proxy.sh s3a-jars``)."""
    return [j for j in _script("s3a-jars").strip().split(",") if j]


@dataclass(frozen=True)
class S3Store:
    """A running s3proxy instance and what a reader needs to reach it."""

    endpoint: str
    access_key: str
    secret_key: str
    bucket: str
    instance: str  # the instance directory (properties, pid, server log)
    data: str  # the filesystem-nio2 base directory (the bucket is data/bucket)
    latency: str
    jars: tuple[str, ...]

    @property
    def log(self) -> Path:
        return Path(self.instance) / "server.log"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> S3Store:
        return cls(**{**value, "jars": tuple(value["jars"])})

    def url(self, key: str) -> str:
        return f"s3a://{self.bucket}/{key}"

    def spark_conf(self) -> dict[str, str]:
        """Session keys: the S3A jars and the keys that point S3A at this server."""
        s3a = {
            "endpoint": self.endpoint,
            "endpoint.region": "us-east-1",
            "path.style.access": "true",
            "connection.ssl.enabled": "false",
            "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "access.key": self.access_key,
            "secret.key": self.secret_key,
        }
        conf = {f"spark.hadoop.fs.s3a.{k}": v for k, v in s3a.items()}
        conf["spark.jars"] = ",".join(self.jars)
        # delta-spark's dependencies pull Hadoop's client jars at 3.4.2 through Ivy; S3A 3.5.0
        # goes with Spark's own 3.5.0 ones
        conf["spark.jars.excludes"] = (
            "org.apache.hadoop:hadoop-client-api,org.apache.hadoop:hadoop-client-runtime"
        )
        return conf

    def deltars_options(self) -> dict[str, str]:
        """delta-rs ``storage_options``: endpoint override, plain http, path-style, test keys."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_ALLOW_HTTP": "true",
            "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
            # reads only; without it delta-rs asks for a locking provider before any write
            "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
        }

    def deltars_url(self, s3a_url: str) -> str:
        return "s3://" + s3a_url.removeprefix("s3a://")

    def place(self, table: str | Path) -> str:
        """Puts the cached table into the bucket (a symlink, ETags written); its s3a:// URL."""
        table = Path(table).resolve()
        tag_etags(table)
        link = Path(self.data) / self.bucket / table.name
        if link.is_symlink() and link.resolve() == table:
            return self.url(table.name)
        if link.is_symlink():
            link.unlink()
        elif link.exists():
            raise FileExistsError(f"{link} exists and is not a link to {table}")
        link.symlink_to(table, target_is_directory=True)
        return self.url(table.name)

    def local_path(self, url: str) -> Path:
        """The file behind an s3a:// (or s3://) URL of this bucket."""
        parts = urlsplit(url)
        if parts.netloc != self.bucket:
            raise ValueError(f"{url} is not in bucket {self.bucket}")
        return Path(self.data) / self.bucket / parts.path.lstrip("/")


def start(
    instance: Path, data: Path, latency: str = CLOUD_LATENCY, *, spark: bool = True
) -> S3Store:
    """Starts s3proxy (``scripts/s3proxy.sh start``) on ``data`` with per-request ``latency``.

    With ``spark`` the S3A jars are fetched first (once, by Maven); without, ``jars`` is empty.
    """
    data.mkdir(parents=True, exist_ok=True)
    jars = tuple(s3a_jars()) if spark else ()
    env = {
        "S3PROXY_DATA": str(data),
        "S3PROXY_BUCKETS": BUCKET,
        "S3PROXY_LATENCY": latency,
        "LOG_LEVEL": "debug",  # one "request:" line per HTTP request: the request counts
    }
    out = _script("start", str(instance), env=env)
    line = next((x for x in out.splitlines() if x.startswith("endpoint=")), None)
    if line is None:
        raise RuntimeError(f"scripts/s3proxy.sh start printed no endpoint line:\n{out}")
    fields = dict(item.split("=", 1) for item in line.split())
    return S3Store(
        endpoint=fields["endpoint"],
        access_key=fields["access_key"],
        secret_key=fields["secret_key"],
        bucket=fields["bucket"],
        instance=fields["dir"],
        data=str(data.resolve()),
        latency=latency,
        jars=jars,
    )


def stop(store: S3Store) -> None:
    """Stops the server; the data directory (the bucket's symlinks) stays."""
    _script("stop", store.instance)


def _tag(path: Path, seen: set[tuple[int, int]]) -> int:
    st = path.stat()
    inode = (st.st_dev, st.st_ino)
    if inode in seen:
        return 0
    seen.add(inode)
    try:
        os.getxattr(path, _ETAG_XATTR)
        return 0
    except OSError:
        pass
    digest = hashlib.md5(path.read_bytes(), usedforsecurity=False).digest()
    os.setxattr(path, _ETAG_XATTR, digest)
    return 1


def tag_etags(table: Path) -> int:
    """Writes the ETag attribute s3proxy serves on every file of ``table`` that lacks one.

    The log is checked every time (commits come and go); the rest once (then marked).
    Returns the number of files tagged.
    """
    seen: set[tuple[int, int]] = set()
    tagged = 0
    started = time.monotonic()
    log = table / "_delta_log"
    if (table / _TAGGED).exists():
        roots = [log] if log.is_dir() else []
        tagged += sum(_tag(p, seen) for r in roots for p in r.rglob("*") if p.is_file())
    else:
        for dirpath, _, names in os.walk(table):
            for name in names:
                tagged += _tag(Path(dirpath) / name, seen)
        (table / _TAGGED).write_text(json.dumps({"at": time.time()}))
        _tag(table / _TAGGED, seen)
    if tagged > 100:
        print(
            f"[replay] {table.name}: ETag attribute on {tagged} files "
            f"({time.monotonic() - started:.1f}s)",
            flush=True,
        )
    return tagged


# A request as the server logs it on arrival:
#   ... request: ...{GET@5ab1 http://127.0.0.1:PORT/bucket/key?query HTTP/1.1}
_REQUEST = re.compile(r"request: .*\{([A-Z]+)@[0-9a-f]+ (\S+) HTTP/[0-9.]+\}")
KINDS = ("LIST", "HEAD", "GET", "WRITE")


def classify(method: str, url: str) -> str:
    """LIST (GET on a bucket), HEAD, GET (of an object), WRITE (PUT, POST, DELETE), OTHER."""
    parts = urlsplit(url)
    key = parts.path.lstrip("/").partition("/")[2]
    if method == "GET":
        return "GET" if key else "LIST"
    if method == "HEAD":
        return "HEAD"
    if method in ("PUT", "POST", "DELETE"):
        return "WRITE"
    return "OTHER"


class RequestLog:
    """Counts the requests the server logged between :meth:`mark` and :meth:`since`."""

    def __init__(self, log: Path, settle_s: float = 0.2) -> None:
        self.log = log
        self.settle_s = settle_s

    def mark(self) -> int:
        return self.log.stat().st_size

    def since(self, mark: int) -> dict[str, int]:
        time.sleep(self.settle_s)  # the last requests' lines reach the log
        with open(self.log, "rb") as f:
            f.seek(mark)
            text = f.read().decode("utf-8", "replace")
        counts = dict.fromkeys((*KINDS, "OTHER", "total"), 0)
        for m in _REQUEST.finditer(text):
            counts[classify(m.group(1), m.group(2))] += 1
            counts["total"] += 1
        if not counts["OTHER"]:
            del counts["OTHER"]
        return counts


def placed(store: Any, manifest: dict[str, Any]) -> dict[str, Any]:
    """``manifest`` of a cached table put into the store's bucket: ``table`` is its URL."""
    local = manifest.get("local_table", manifest["table"])
    return {**manifest, "local_table": local, "table": store.place(local)}


def new_s3a_client(spark: Any, url: str) -> None:
    """Closes the session's cached S3A client of ``url``'s bucket: the next read makes a new one."""
    from delta_replay.jvm import jspark_context, jvm

    hadoop = jspark_context(spark).hadoopConfiguration()
    j = jvm(spark)
    j.org.apache.hadoop.fs.FileSystem.get(j.java.net.URI(url), hadoop).close()
