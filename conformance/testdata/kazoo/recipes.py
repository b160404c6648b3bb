"""Drive one ZooKeeper-compatible server with kazoo's recipes; used by
TestKazooRecipes.

Usage: /usr/bin/python3 recipes.py HOST:PORT [SCENARIO...]

Runs every scenario (or the named ones) in order, several clients and
threads each, and prints one JSON object per scenario:
{"scenario": NAME, "result": {...}} or {"scenario": NAME, "error": TEXT}.
It records what happened and leaves judging it to the Go test. Every wait
has a deadline, and so does every scenario, so a server that never answers
produces an error line instead of a hang.
"""

import json
import queue
import sys
import threading
import time
import traceback

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout
from kazoo.recipe.cache import TreeCache, TreeEvent

WAIT = 20.0  # seconds for any one event; matches the Go side's eventTimeout
DENIED = 0.3  # seconds to wait for a lock or lease that is held elsewhere
ROOT = "/kazoo-recipes"

HOSTS = None


class Run:
    """One scenario: its result, its clients, and its threads."""

    def __init__(self, name):
        self.name = name
        self.result = {}
        self.clients = []

    def client(self):
        zk = KazooClient(
            hosts=HOSTS,
            timeout=10.0,
            # Optimistic recipes (Counter) retry on BadVersion through the
            # command retry; contention needs more than the default.
            command_retry={"max_tries": 100, "delay": 0.01, "max_delay": 0.2},
        )
        self.clients.append(zk)
        zk.start(timeout=WAIT)
        return zk

    def close(self):
        for zk in self.clients:
            try:
                zk.stop()
                zk.close()
            except Exception:
                pass

    def parallel(self, n, fn):
        """Runs fn(0..n-1) on n threads started together; raises the first
        failure or a timeout."""
        start = threading.Event()
        errors = []

        def body(i):
            start.wait()
            try:
                fn(i)
            except BaseException as e:  # noqa: B902 - reported, not swallowed
                errors.append("%s: %s" % (type(e).__name__, e))

        threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
        for t in threads:
            t.start()
        start.set()
        deadline = time.monotonic() + 120
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                raise TimeoutError("worker thread still running after 120s")
        if errors:
            raise RuntimeError("worker failed: " + errors[0])


class Peak:
    """A counter of concurrent holders that remembers its maximum."""

    def __init__(self):
        self._mu = threading.Lock()
        self.now = 0
        self.max = 0

    def enter(self):
        with self._mu:
            self.now += 1
            self.max = max(self.max, self.now)
            return self.now

    def leave(self):
        with self._mu:
            self.now -= 1


def try_acquire(lock, timeout):
    """acquire with a timeout, as a bool: kazoo's Lock raises LockTimeout."""
    try:
        return bool(lock.acquire(timeout=timeout))
    except LockTimeout:
        return False


def wait_until(what, cond):
    deadline = time.monotonic() + WAIT
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError("no %s within %.0fs" % (what, WAIT))
        time.sleep(0.01)


def next_item(q, what, timeout=WAIT):
    try:
        return q.get(timeout=timeout)
    except queue.Empty:
        raise TimeoutError("no %s within %.1fs" % (what, timeout)) from None


# ---- locks ----

def scenario_lock(r):
    path = ROOT + "/lock"
    a, b = r.client(), r.client()
    la, lb = a.Lock(path, "a"), b.Lock(path, "b")
    if not la.acquire(timeout=WAIT):
        raise RuntimeError("first acquire failed")
    r.result["contenders_while_held"] = la.contenders()
    r.result["other_nonblocking"] = lb.acquire(blocking=False)
    r.result["other_timeout"] = try_acquire(lb, DENIED)
    la.release()
    r.result["other_after_release"] = try_acquire(lb, WAIT)
    lb.release()

    counter = ROOT + "/lock-counter"
    a.create(counter, b"0")
    peak = Peak()
    threads, each = 5, 20
    clients = [r.client() for _ in range(threads)]

    def work(i):
        zk = clients[i]
        lock = zk.Lock(path, "w%d" % i)
        for _ in range(each):
            if not lock.acquire(timeout=WAIT):
                raise TimeoutError("acquire " + path)
            try:
                peak.enter()
                data, _ = zk.get(counter)
                zk.set(counter, str(int(data) + 1).encode())
                peak.leave()
            finally:
                lock.release()

    r.parallel(threads, work)
    r.result["counter"] = int(a.get(counter)[0])
    r.result["max_holders"] = peak.max
    r.result["lock_nodes_after"] = len(a.get_children(path))


def scenario_rwlock(r):
    path = ROOT + "/rwlock"
    c1, c2, cw = r.client(), r.client(), r.client()
    r1, r2, w = c1.ReadLock(path, "r1"), c2.ReadLock(path, "r2"), cw.WriteLock(path, "w")
    if not r1.acquire(timeout=WAIT):
        raise RuntimeError("first read lock failed")
    r.result["readers_share"] = try_acquire(r2, WAIT)
    r.result["writer_while_read"] = try_acquire(w, DENIED)
    r1.release()
    r.result["writer_while_one_reader"] = try_acquire(w, DENIED)
    r2.release()
    r.result["writer_after_readers"] = try_acquire(w, WAIT)
    r.result["reader_while_write"] = try_acquire(r1, DENIED)
    r.result["writer_while_write"] = try_acquire(c2.WriteLock(path, "w2"), DENIED)
    w.release()
    r.result["reader_after_write"] = try_acquire(r1, WAIT)
    r1.release()

    # kazoo 2.8's ReadLock waits for the newest write-lock node, even one
    # queued after it, while that writer waits for the reader: mixing
    # waiting readers and writers deadlocks against any server (fixed in
    # kazoo 2.9). So readers and writers contend in separate phases here.
    n = 3
    readers = Peak()
    meet = threading.Barrier(n, timeout=WAIT)
    read_clients = [r.client() for _ in range(n)]
    held = threading.Event()
    writer_saw = []

    def writer_after_readers():
        held.wait(WAIT)
        lock = cw.WriteLock(path, "w-late")
        if try_acquire(lock, WAIT):
            writer_saw.append(readers.now)
            lock.release()

    late = threading.Thread(target=writer_after_readers, daemon=True)
    late.start()

    def read(i):
        lock = read_clients[i].ReadLock(path, "r%d" % i)
        if not lock.acquire(timeout=WAIT):
            raise TimeoutError("acquire read lock")
        try:
            readers.enter()
            meet.wait()  # all readers hold the lock at once
            held.set()
            time.sleep(0.1)  # the writer queues behind us meanwhile
            readers.leave()
        finally:
            lock.release()

    r.parallel(n, read)
    late.join(WAIT)
    r.result["readers_together"] = readers.max
    r.result["readers_when_writer_got_it"] = writer_saw

    counter = [0]
    writers = Peak()
    each = 8
    write_clients = [r.client() for _ in range(n)]

    def write(i):
        lock = write_clients[i].WriteLock(path, "w%d" % i)
        for _ in range(each):
            if not lock.acquire(timeout=WAIT):
                raise TimeoutError("acquire write lock")
            try:
                writers.enter()
                v = counter[0]  # a read-modify-write only the lock makes safe
                time.sleep(0.001)
                counter[0] = v + 1
                writers.leave()
            finally:
                lock.release()

    r.parallel(n, write)
    r.result["writes"] = counter[0]
    r.result["max_writers"] = writers.max
    r.result["lock_nodes_after"] = len(cw.get_children(path))


def scenario_semaphore(r):
    path = ROOT + "/semaphore"
    clients = [r.client() for _ in range(3)]
    sems = [zk.Semaphore(path, "s%d" % i, max_leases=2) for i, zk in enumerate(clients)]
    sems[0].acquire(timeout=WAIT)
    sems[1].acquire(timeout=WAIT)
    r.result["holders_when_full"] = sorted(sems[0].lease_holders())
    r.result["third_nonblocking"] = sems[2].acquire(blocking=False)
    r.result["third_timeout"] = try_acquire(sems[2], DENIED)
    sems[0].release()
    r.result["third_after_release"] = try_acquire(sems[2], WAIT)
    sems[1].release()
    sems[2].release()

    leases = Peak()
    acquired = [0]
    mu = threading.Lock()
    threads, each = 5, 4
    workers = [r.client() for _ in range(threads)]

    def work(i):
        sem = workers[i].Semaphore(path, "w%d" % i, max_leases=2)
        for _ in range(each):
            if not try_acquire(sem, WAIT):
                raise TimeoutError("acquire lease")
            try:
                leases.enter()
                with mu:
                    acquired[0] += 1
                time.sleep(0.01)
                leases.leave()
            finally:
                sem.release()

    r.parallel(threads, work)
    r.result["acquired"] = acquired[0]
    r.result["max_leases"] = leases.max
    r.result["holders_after"] = clients[0].Semaphore(path, "x", max_leases=2).lease_holders()


# ---- leaders and groups ----

def scenario_election(r):
    """Three contenders lead in turn: the first gives up by returning, the
    second loses its session, the third returns."""
    path = ROOT + "/election"
    n = 3
    clients = [r.client() for _ in range(n)]
    elections = [zk.Election(path, "e%d" % i) for i, zk in enumerate(clients)]
    quit_ = [threading.Event() for _ in range(n)]
    took = queue.Queue()
    active = Peak()
    deposed = [False] * n
    mu = threading.Lock()
    log = []

    def lead(i):
        active.enter()
        took.put(i)
        quit_[i].wait(2 * WAIT)

    def contend(i):
        try:
            elections[i].run(lead, i)
        except Exception:
            pass  # the contender whose client was stopped cannot release

    threads = [threading.Thread(target=contend, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    wait_until("three contenders", lambda: len(elections[0].contenders()) == n)
    r.result["contenders"] = sorted(elections[0].contenders())
    for rnd in range(n):
        leader = next_item(took, "leader in round %d" % rnd)
        log.append("lead e%d" % leader)
        live = [i for i in range(n) if not deposed[i]]
        wait_until("contenders agreeing on e%d" % leader,
                   lambda: elections[live[-1]].contenders()[:1] == ["e%d" % leader])
        with mu:
            deposed[leader] = True
        active.leave()  # counted out before it goes
        if rnd == 1:
            clients[leader].stop()  # session closed: its node goes with it
            log.append("session closed e%d" % leader)
        else:
            log.append("returned e%d" % leader)
        quit_[leader].set()
    for t in threads:
        t.join(WAIT)
    r.result["log"] = log
    r.result["max_simultaneous_leaders"] = active.max
    r.result["extra_leaderships"] = took.qsize()


def scenario_party(r):
    path = ROOT + "/party"
    clients = [r.client() for _ in range(3)]
    parties = [zk.Party(path, "p%d" % i) for i, zk in enumerate(clients)]
    for p in parties:
        p.join()
    r.result["size"] = len(parties[0])
    r.result["members"] = sorted(parties[0])
    parties[1].leave()
    r.result["after_leave"] = sorted(parties[0])
    clients[2].stop()  # its member node is ephemeral
    r.result["after_session_close"] = sorted(parties[0])

    shallow_path = ROOT + "/shallow-party"
    sh = [zk.ShallowParty(shallow_path, "s%d" % i) for i, zk in enumerate(clients[:2])]
    for p in sh:
        p.join()
    r.result["shallow_members"] = sorted(sh[0])
    sh[0].leave()
    r.result["shallow_after_leave"] = sorted(sh[1])


# ---- shared values and barriers ----

def scenario_counter(r):
    path = ROOT + "/counter"
    a = r.client()
    c = a.Counter(path)
    c += 5
    c -= 2
    r.result["after_add_sub"] = c.value
    r.result["pre_post"] = [c.pre_value, c.post_value]
    f = a.Counter(ROOT + "/counter-float", default=0.0)
    f += 1.5
    f += 1.5
    r.result["float"] = f.value

    threads, each = 4, 25
    clients = [r.client() for _ in range(threads)]

    def work(i):
        counter = clients[i].Counter(path)
        for _ in range(each):
            counter += 1

    r.parallel(threads, work)
    r.result["final"] = a.Counter(path).value


def scenario_barrier(r):
    path = ROOT + "/barrier"
    a = r.client()
    barrier = a.Barrier(path)
    barrier.create()
    clients = [r.client() for _ in range(3)]
    passed = queue.Queue()
    threads = [
        threading.Thread(target=lambda zk=zk: passed.put(zk.Barrier(path).wait(timeout=WAIT)), daemon=True)
        for zk in clients
    ]
    for t in threads:
        t.start()
    r.result["wait_while_up"] = a.Barrier(path).wait(timeout=DENIED)
    r.result["passed_while_up"] = passed.qsize()
    barrier.remove()
    r.result["waiters_released"] = [next_item(passed, "waiter released") for _ in threads]
    r.result["wait_after_remove"] = a.Barrier(path).wait(timeout=WAIT)


def scenario_double_barrier(r):
    """Three members arrive 0.2 s apart: none may enter before the last has
    arrived, and none may finish leaving before the last has started to."""
    path = ROOT + "/double-barrier"
    n = 3
    clients = [r.client() for _ in range(n)]
    mu = threading.Lock()
    arrived, leaving = [0], [0]
    entered_seen, left_seen, participating = [None] * n, [None] * n, [None] * n

    def member(i):
        b = clients[i].DoubleBarrier(path, n, identifier="d%d" % i)
        time.sleep(0.2 * i)
        with mu:
            arrived[0] += 1
        b.enter()
        with mu:
            entered_seen[i] = arrived[0]
        participating[i] = b.participating
        time.sleep(0.2 * i)
        with mu:
            leaving[0] += 1
        b.leave()
        with mu:
            left_seen[i] = leaving[0]

    r.parallel(n, member)
    r.result["arrivals_seen_on_enter"] = entered_seen
    r.result["leavers_seen_on_leave"] = left_seen
    r.result["participating"] = participating
    r.result["members_after"] = clients[0].get_children(path)


# ---- queues ----

def scenario_queue(r):
    path = ROOT + "/queue"
    a = r.client()
    q = a.Queue(path)
    q.put(b"low", priority=200)
    q.put(b"high", priority=10)
    for i in range(3):
        q.put(b"mid-%d" % i)
    r.result["len"] = len(q)
    r.result["order"] = [q.get().decode() for _ in range(5)]
    r.result["get_empty"] = q.get()

    items = 30
    for i in range(items):
        q.put(b"item-%02d" % i)
    clients = [r.client() for _ in range(3)]
    got = [[] for _ in clients]

    def consume(i):
        cq = clients[i].Queue(path)
        while True:
            item = cq.get()
            if item is None:
                return
            got[i].append(item.decode())

    r.parallel(len(clients), consume)
    everything = sorted(x for g in got for x in g)
    r.result["consumed"] = len(everything)
    r.result["consumed_distinct"] = len(set(everything))
    r.result["consumed_in_order_per_consumer"] = all(g == sorted(g) for g in got)


def scenario_locking_queue(r):
    path = ROOT + "/locking-queue"
    a, b = r.client(), r.client()
    qa, qb = a.LockingQueue(path), b.LockingQueue(path)
    qa.put(b"x")
    qa.put(b"y")
    r.result["a_gets"] = qa.get(WAIT).decode()
    r.result["b_gets"] = qb.get(WAIT).decode()  # x is taken by a
    r.result["b_holds"] = qb.holds_lock()
    r.result["b_released"] = qb.release()  # y goes back, unconsumed
    r.result["a_consumed"] = qa.consume()
    again = qb.get(WAIT)
    r.result["b_gets_again"] = None if again is None else again.decode()
    r.result["b_consumed"] = qb.consume()
    r.result["len_after"] = len(qa)
    r.result["get_empty"] = qa.get(DENIED)

    items = 12
    qa.put_all([b"job-%02d" % i for i in range(items)])
    clients = [r.client() for _ in range(3)]
    got = [[] for _ in clients]

    def work(i):
        cq = clients[i].LockingQueue(path)
        while True:
            item = cq.get(1.0)
            if item is None:
                return
            got[i].append(item.decode())
            if not cq.consume():
                raise RuntimeError("consume failed")

    r.parallel(len(clients), work)
    everything = [x for g in got for x in g]
    r.result["jobs_consumed"] = len(everything)
    r.result["jobs_distinct"] = len(set(everything))
    r.result["len_after_jobs"] = len(qa)


# ---- watchers and caches ----

def scenario_data_watch(r):
    path = ROOT + "/data-watch"
    watcher, writer = r.client(), r.client()
    writer.create(path, b"v0", makepath=True)
    seen = queue.Queue()
    stop = threading.Event()

    @watcher.DataWatch(path)
    def on_change(data, stat, event):
        seen.put([
            None if data is None else data.decode(),
            None if stat is None else stat.version,
            None if event is None else event.type,
        ])
        if stop.is_set():
            return False  # ends the watch
        return None

    calls = [next_item(seen, "initial DataWatch call")]
    for i in range(1, 4):
        writer.set(path, b"v%d" % i)
        calls.append(next_item(seen, "DataWatch call after set %d" % i))
    writer.delete(path)
    calls.append(next_item(seen, "DataWatch call after delete"))
    stop.set()
    writer.create(path, b"again")
    calls.append(next_item(seen, "DataWatch call after re-create"))
    writer.set(path, b"ignored")
    try:
        calls.append(next_item(seen, "call after the watch ended", timeout=DENIED))
    except TimeoutError:
        pass
    r.result["calls"] = calls


def scenario_children_watch(r):
    path = ROOT + "/children-watch"
    watcher, writer = r.client(), r.client()
    writer.ensure_path(path)
    seen = queue.Queue()
    watcher.ChildrenWatch(path)(lambda children: seen.put(sorted(children)))
    calls = [next_item(seen, "initial ChildrenWatch call")]
    for name in ("c0", "c1", "c2"):
        writer.create(path + "/" + name)
        calls.append(next_item(seen, "ChildrenWatch call after creating " + name))
    writer.delete(path + "/c1")
    calls.append(next_item(seen, "ChildrenWatch call after deleting c1"))
    writer.set(path, b"data changes do not count")
    writer.create(path + "/c3", ephemeral=True)
    calls.append(next_item(seen, "ChildrenWatch call after creating c3"))
    r.result["calls"] = calls


def scenario_tree_cache(r):
    path = ROOT + "/tree-cache"
    watcher, writer = r.client(), r.client()
    writer.create(path + "/x", b"1", makepath=True)
    events = queue.Queue()
    cache = TreeCache(watcher, path)
    names = {
        TreeEvent.NODE_ADDED: "added",
        TreeEvent.NODE_UPDATED: "updated",
        TreeEvent.NODE_REMOVED: "removed",
        TreeEvent.INITIALIZED: "initialized",
    }

    def listener(ev):
        if ev.event_type in names:
            d = ev.event_data
            events.put([names[ev.event_type]] + ([] if d is None else [d.path, d.data.decode()]))

    cache.listen(listener)
    cache.start()
    log = []

    def expect(n, what):
        for _ in range(n):
            log.append(next_item(events, what))

    try:
        expect(3, "root and x added, then initialized")
        writer.create(path + "/y", b"2")
        expect(1, "y added")
        writer.set(path + "/x", b"11")
        expect(1, "x updated")
        writer.create(path + "/y/z", b"3")
        expect(1, "z added")
        r.result["cached_x"] = cache.get_data(path + "/x").data.decode()
        r.result["cached_children"] = sorted(cache.get_children(path))
        writer.delete(path + "/y", recursive=True)
        expect(2, "z and y removed")
        r.result["cached_children_after"] = sorted(cache.get_children(path))
    finally:
        cache.close()
    r.result["events"] = log


SCENARIOS = [
    ("lock", 60, scenario_lock),
    ("rwlock", 60, scenario_rwlock),
    ("semaphore", 60, scenario_semaphore),
    ("election", 60, scenario_election),
    ("party", 30, scenario_party),
    ("counter", 60, scenario_counter),
    ("barrier", 30, scenario_barrier),
    ("double-barrier", 30, scenario_double_barrier),
    ("queue", 60, scenario_queue),
    ("locking-queue", 60, scenario_locking_queue),
    ("data-watch", 30, scenario_data_watch),
    ("children-watch", 30, scenario_children_watch),
    ("tree-cache", 30, scenario_tree_cache),
]


def run_one(name, limit, fn):
    r = Run(name)
    out = {}

    def body():
        try:
            fn(r)
            out["ok"] = True
        except BaseException as e:  # noqa: B902 - reported to the Go test
            out["error"] = "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc())

    start = time.monotonic()
    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(limit)
    if t.is_alive():
        line = {"scenario": name, "error": "timed out after %ds" % limit}
    elif "error" in out:
        line = {"scenario": name, "error": out["error"]}
    else:
        line = {"scenario": name, "result": r.result,
                "elapsed_ms": int((time.monotonic() - start) * 1000)}
    print(json.dumps(line, sort_keys=True), flush=True)
    r.close()


def main():
    global HOSTS
    HOSTS = sys.argv[1]
    chosen = sys.argv[2:]
    known = {name for name, _, _ in SCENARIOS}
    for name in chosen:
        if name not in known:
            sys.exit("unknown scenario %s; known: %s" % (name, sorted(known)))
    for name, limit, fn in SCENARIOS:
        if not chosen or name in chosen:
            run_one(name, limit, fn)
    sys.stdout.flush()
    # Threads of a scenario that timed out may still be blocked in kazoo.
    import os
    os._exit(0)


if __name__ == "__main__":
    main()
