"""Drive one ZooKeeper-compatible server with kazoo; used by TestKazoo.

Usage: /usr/bin/python3 kazoo_check.py HOST:PORT

Prints one JSON object per line, {"op": ..., ...}, for the Go test to check;
it asserts nothing itself beyond what kazoo raises. Every wait has a
deadline so a server that never answers ends the script with an "error"
line instead of hanging it.
"""

import json
import os
import queue
import sys
import traceback

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)

WAIT = 20.0  # seconds for any one event; matches the Go side's eventTimeout

STAT_FIELDS = (
    "czxid", "mzxid", "ctime", "mtime", "version", "cversion", "aversion",
    "ephemeralOwner", "dataLength", "numChildren", "pzxid",
)


def emit(op, **fields):
    fields["op"] = op
    print(json.dumps(fields, sort_keys=True), flush=True)


def stat(st):
    return None if st is None else {f: getattr(st, f) for f in STAT_FIELDS}


def text(data):
    return None if data is None else data.decode("utf-8")


def event(ev):
    return None if ev is None else {"type": ev.type, "state": ev.state, "path": ev.path}


def next_item(q, what):
    try:
        return q.get(timeout=WAIT)
    except queue.Empty:
        raise TimeoutError("no %s within %.0fs" % (what, WAIT)) from None


def connect(hosts):
    zk = KazooClient(hosts=hosts, timeout=10.0)
    zk.start(timeout=60.0)
    return zk


def main(hosts):
    a = connect(hosts)
    b = connect(hosts)
    emit("connected", session_a=a.client_id[0], session_b=b.client_id[0])

    a.create("/kazoo", b"parent")
    path = a.create("/kazoo/n-", b"hello", ephemeral=True, sequence=True)
    emit("create", path=path)
    second = a.create("/kazoo/n-", b"second", ephemeral=True, sequence=True)
    emit("create", path=second)

    emit("ls", children=sorted(a.get_children("/kazoo")))
    data, st = a.get("/kazoo")
    emit("get", path="/kazoo", data=text(data), stat=stat(st))

    # A one-shot watch through get(watch=...).
    watched = queue.Queue()
    data, st = a.get(path, watch=watched.put)
    emit("get", path=path, data=text(data), stat=stat(st))

    # DataWatch and ChildrenWatch call back at once with the current state,
    # then on every change, re-arming themselves.
    datawatch = queue.Queue()
    childwatch = queue.Queue()

    @a.DataWatch(path)
    def on_data(data, st, ev):
        datawatch.put({"data": text(data), "stat": stat(st), "event": event(ev)})

    @a.ChildrenWatch("/kazoo")
    def on_children(children):
        childwatch.put(sorted(children))

    emit("datawatch", **next_item(datawatch, "initial DataWatch call"))
    emit("childrenwatch", children=next_item(childwatch, "initial ChildrenWatch call"))

    try:
        b.set(path, b"x", version=7)
        emit("set_bad_version", error=None)
    except BadVersionError as e:
        emit("set_bad_version", error=type(e).__name__)

    st = b.set(path, b"world!", version=0)
    emit("set", path=path, stat=stat(st))
    emit("watch", **event(next_item(watched, "get watch event")))
    emit("datawatch", **next_item(datawatch, "DataWatch call after set"))

    errors = {}
    for name, call, exc in (
        ("create_existing", lambda: a.create("/kazoo"), NodeExistsError),
        ("create_under_ephemeral", lambda: a.create(path + "/c"), NoChildrenForEphemeralsError),
        ("create_without_parent", lambda: a.create("/kazoo/none/c"), NoNodeError),
        ("delete_not_empty", lambda: a.delete("/kazoo"), NotEmptyError),
        ("delete_bad_version", lambda: a.delete(path, version=0), BadVersionError),
        ("get_missing", lambda: a.get("/kazoo/none"), NoNodeError),
    ):
        try:
            call()
            errors[name] = None
        except exc as e:
            errors[name] = type(e).__name__
    emit("errors", errors=errors)

    b.delete(path, version=1)
    emit("delete", path=path)
    emit("datawatch", **next_item(datawatch, "DataWatch call after delete"))
    emit("childrenwatch", children=next_item(childwatch, "ChildrenWatch call after delete"))
    emit("exists", path=path, stat=stat(b.exists(path)))

    # Closing a's session removes its other ephemeral node.
    gone = queue.Queue()
    b.exists(second, watch=gone.put)
    a.stop()
    a.close()
    emit("watch", **event(next_item(gone, "exists watch on a's ephemeral")))
    children, st = b.get_children("/kazoo", include_data=True)
    emit("ls", children=sorted(children), stat=stat(st))

    b.delete("/kazoo")
    b.stop()
    b.close()
    emit("done")


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except Exception as e:  # reported to the Go test as data, with the trace
        emit("error", error="%s: %s" % (type(e).__name__, e), trace=traceback.format_exc())
        # kazoo's connection threads may still be running; do not wait.
        os._exit(1)
