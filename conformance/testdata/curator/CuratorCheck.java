// CuratorCheck drives one ZooKeeper-compatible server with Apache Curator's
// recipes; used by TestCurator.
//
// Usage: java CuratorCheck HOST:PORT [SCENARIO...]
//
// Runs every scenario (or the named ones) in order and prints one line per
// observation, "scenario<TAB>key<TAB>value". A scenario ends with either
// "scenario<TAB>done<TAB>true" or "scenario<TAB>error<TAB>message"; the Go
// test decides what the values must be. Every wait has a deadline, so a
// server that never answers produces an error line instead of a hang.

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.ProtectedUtils;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedCountListener;
import org.apache.curator.framework.recipes.shared.SharedCountReader;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public final class CuratorCheck {
    /** How long any one wait for the server may take; matches eventTimeout on the Go side. */
    static final long WAIT_MS = 20_000;
    /** A wait that must time out because the lock or lease is held elsewhere. */
    static final long DENIED_MS = 300;

    static String connect;

    /** One scenario: its name, its time limit and its body. */
    record Scenario(String name, long limitSeconds, Body body) {}

    interface Body {
        void run(Run r) throws Exception;
    }

    /** Work done by one thread of a concurrent scenario. */
    interface Worker {
        void run(int index) throws Exception;
    }

    /** A running scenario: prints its lines and closes what it opened. */
    static final class Run {
        final String name;
        final List<Closeable> opened = new CopyOnWriteArrayList<>();

        Run(String name) {
            this.name = name;
        }

        void emit(String key, Object value) {
            String v = String.valueOf(value).replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
            synchronized (System.out) {
                System.out.println(name + "\t" + key + "\t" + v);
                System.out.flush();
            }
        }

        /** A started client of its own session, closed when the scenario ends. */
        CuratorFramework client() throws Exception {
            CuratorFramework c = CuratorFrameworkFactory.builder()
                    .connectString(connect)
                    .sessionTimeoutMs(30_000)
                    .connectionTimeoutMs(15_000)
                    .retryPolicy(new ExponentialBackoffRetry(100, 5))
                    .build();
            opened.add(c);
            c.start();
            if (!c.blockUntilConnected((int) WAIT_MS, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("client not connected within " + WAIT_MS + "ms");
            }
            return c;
        }

        <T extends Closeable> T own(T c) {
            opened.add(0, c); // recipes close before their clients
            return c;
        }

        void close() {
            for (Closeable c : opened) {
                try {
                    c.close();
                } catch (Exception | Error e) {
                    // already closed by the scenario, or its server gone
                }
            }
        }

        /**
         * Runs n workers on their own threads, started together, and waits
         * for all of them. It throws the first failure, or a timeout.
         */
        void parallel(int n, Worker w) throws Exception {
            CountDownLatch start = new CountDownLatch(1);
            ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int index = i;
                Thread t = new Thread(() -> {
                    try {
                        start.await();
                        w.run(index);
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                }, name + "-worker-" + i);
                t.setDaemon(true);
                threads.add(t);
                t.start();
            }
            start.countDown();
            long deadline = System.currentTimeMillis() + 120_000;
            for (Thread t : threads) {
                t.join(Math.max(1, deadline - System.currentTimeMillis()));
                if (t.isAlive()) {
                    throw new TimeoutException(t.getName() + " still running");
                }
            }
            if (!errors.isEmpty()) {
                Throwable e = errors.peek();
                throw new Exception("worker failed: " + e, e);
            }
        }
    }

    static void waitFor(String what, BooleanSupplier cond) throws Exception {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new TimeoutException("no " + what + " within " + WAIT_MS + "ms");
            }
            Thread.sleep(10);
        }
    }

    static void max(AtomicInteger m, int v) {
        m.accumulateAndGet(v, Math::max);
    }

    /**
     * The number of children of path, 0 if it is gone: recipes create their
     * parents as containers, which the server removes once empty.
     */
    static int childCount(CuratorFramework c, String path) throws Exception {
        try {
            return c.getChildren().forPath(path).size();
        } catch (KeeperException.NoNodeException e) {
            return 0;
        }
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    // ---- locks ----

    static void mutexReentrant(Run r) throws Exception {
        String path = "/curator/mutex-reentrant";
        InterProcessMutex a = new InterProcessMutex(r.client(), path);
        InterProcessMutex b = new InterProcessMutex(r.client(), path);
        if (!a.acquire(WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("first acquire failed");
        }
        r.emit("reacquired", a.acquire(WAIT_MS, TimeUnit.MILLISECONDS));
        r.emit("participants_held_twice", a.getParticipantNodes().size());
        r.emit("other_while_held", b.acquire(DENIED_MS, TimeUnit.MILLISECONDS));
        a.release();
        r.emit("held_after_one_release", a.isAcquiredInThisProcess());
        r.emit("other_after_one_release", b.acquire(DENIED_MS, TimeUnit.MILLISECONDS));
        a.release();
        r.emit("held_after_two_releases", a.isAcquiredInThisProcess());
        r.emit("other_after_release", b.acquire(WAIT_MS, TimeUnit.MILLISECONDS));
        b.release();
        r.emit("lock_nodes_after", childCount(r.client(), path));
    }

    /** The classic: ten clients sell stock guarded by one mutex. */
    static void mutexStock(Run r) throws Exception {
        String lock = "/curator/stock/lock", stock = "/curator/stock/count";
        r.client().create().creatingParentsIfNeeded().forPath(stock, bytes("1000"));
        AtomicInteger holders = new AtomicInteger(), maxHolders = new AtomicInteger();
        AtomicInteger sold = new AtomicInteger(), conflicts = new AtomicInteger();
        int threads = 10, each = 100;
        CuratorFramework[] clients = new CuratorFramework[threads];
        for (int i = 0; i < threads; i++) {
            clients[i] = r.client();
        }
        r.parallel(threads, i -> {
            CuratorFramework c = clients[i];
            InterProcessMutex m = new InterProcessMutex(c, lock);
            for (int n = 0; n < each; n++) {
                if (!m.acquire(WAIT_MS, TimeUnit.MILLISECONDS)) {
                    throw new TimeoutException("acquire " + lock);
                }
                try {
                    max(maxHolders, holders.incrementAndGet());
                    Stat st = new Stat();
                    int v = Integer.parseInt(new String(c.getData().storingStatIn(st).forPath(stock), StandardCharsets.UTF_8));
                    try {
                        c.setData().withVersion(st.getVersion()).forPath(stock, bytes(String.valueOf(v - 1)));
                        sold.incrementAndGet();
                    } catch (KeeperException.BadVersionException e) {
                        conflicts.incrementAndGet();
                    }
                    holders.decrementAndGet();
                } finally {
                    m.release();
                }
            }
        });
        r.emit("final", new String(r.client().getData().forPath(stock), StandardCharsets.UTF_8));
        r.emit("sold", sold.get());
        r.emit("conflicts", conflicts.get());
        r.emit("max_holders", maxHolders.get());
        r.emit("lock_nodes_after", childCount(r.client(), lock));
    }

    static void semaphoreMutex(Run r) throws Exception {
        String path = "/curator/semaphore-mutex";
        InterProcessSemaphoreMutex a = new InterProcessSemaphoreMutex(r.client(), path);
        InterProcessSemaphoreMutex b = new InterProcessSemaphoreMutex(r.client(), path);
        if (!a.acquire(WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("first acquire failed");
        }
        // Unlike InterProcessMutex it is not reentrant.
        r.emit("reacquired", a.acquire(DENIED_MS, TimeUnit.MILLISECONDS));
        r.emit("other_while_held", b.acquire(DENIED_MS, TimeUnit.MILLISECONDS));
        a.release();
        r.emit("other_after_release", b.acquire(WAIT_MS, TimeUnit.MILLISECONDS));
        b.release();

        AtomicInteger holders = new AtomicInteger(), maxHolders = new AtomicInteger();
        AtomicInteger counter = new AtomicInteger();
        int threads = 4, each = 20;
        CuratorFramework[] clients = new CuratorFramework[threads];
        for (int i = 0; i < threads; i++) {
            clients[i] = r.client();
        }
        r.parallel(threads, i -> {
            InterProcessSemaphoreMutex m = new InterProcessSemaphoreMutex(clients[i], path);
            for (int n = 0; n < each; n++) {
                if (!m.acquire(WAIT_MS, TimeUnit.MILLISECONDS)) {
                    throw new TimeoutException("acquire " + path);
                }
                try {
                    max(maxHolders, holders.incrementAndGet());
                    int v = counter.get(); // a read-modify-write only the lock makes safe
                    Thread.yield();
                    counter.set(v + 1);
                    holders.decrementAndGet();
                } finally {
                    m.release();
                }
            }
        });
        r.emit("counter", counter.get());
        r.emit("max_holders", maxHolders.get());
    }

    static void readWriteLock(Run r) throws Exception {
        String path = "/curator/rwlock";
        InterProcessReadWriteLock l1 = new InterProcessReadWriteLock(r.client(), path);
        InterProcessReadWriteLock l2 = new InterProcessReadWriteLock(r.client(), path);
        InterProcessReadWriteLock lw = new InterProcessReadWriteLock(r.client(), path);
        if (!l1.readLock().acquire(WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("first read lock failed");
        }
        r.emit("readers_share", l2.readLock().acquire(WAIT_MS, TimeUnit.MILLISECONDS));
        r.emit("writer_while_read", lw.writeLock().acquire(DENIED_MS, TimeUnit.MILLISECONDS));
        l1.readLock().release();
        r.emit("writer_while_one_reader", lw.writeLock().acquire(DENIED_MS, TimeUnit.MILLISECONDS));
        l2.readLock().release();
        r.emit("writer_after_readers", lw.writeLock().acquire(WAIT_MS, TimeUnit.MILLISECONDS));
        r.emit("reader_while_write", l1.readLock().acquire(DENIED_MS, TimeUnit.MILLISECONDS));
        r.emit("writer_while_write", l2.writeLock().acquire(DENIED_MS, TimeUnit.MILLISECONDS));
        // The write lock's holder may also take the read lock (downgrading).
        r.emit("writer_takes_read", lw.readLock().acquire(WAIT_MS, TimeUnit.MILLISECONDS));
        lw.readLock().release();
        lw.writeLock().release();
        r.emit("reader_after_write", l1.readLock().acquire(WAIT_MS, TimeUnit.MILLISECONDS));
        l1.readLock().release();

        AtomicInteger readers = new AtomicInteger(), writers = new AtomicInteger();
        AtomicInteger maxReaders = new AtomicInteger(), maxWriters = new AtomicInteger();
        AtomicInteger violations = new AtomicInteger(), rounds = new AtomicInteger();
        int threads = 6, each = 8; // threads 0 and 1 write, the rest read
        CuratorFramework[] clients = new CuratorFramework[threads];
        for (int i = 0; i < threads; i++) {
            clients[i] = r.client();
        }
        r.parallel(threads, i -> {
            InterProcessReadWriteLock l = new InterProcessReadWriteLock(clients[i], path);
            boolean writer = i < 2;
            InterProcessMutex m = writer ? l.writeLock() : l.readLock();
            for (int n = 0; n < each; n++) {
                if (!m.acquire(WAIT_MS, TimeUnit.MILLISECONDS)) {
                    throw new TimeoutException("acquire " + (writer ? "write" : "read") + " lock");
                }
                try {
                    if (writer) {
                        int w = writers.incrementAndGet();
                        max(maxWriters, w);
                        if (w != 1 || readers.get() != 0) {
                            violations.incrementAndGet();
                        }
                        Thread.sleep(5);
                        writers.decrementAndGet();
                    } else {
                        max(maxReaders, readers.incrementAndGet());
                        if (writers.get() != 0) {
                            violations.incrementAndGet();
                        }
                        Thread.sleep(5);
                        readers.decrementAndGet();
                    }
                    rounds.incrementAndGet();
                } finally {
                    m.release();
                }
            }
        });
        r.emit("rounds", rounds.get());
        r.emit("violations", violations.get());
        r.emit("max_writers", maxWriters.get());
        r.emit("max_readers", maxReaders.get());
    }

    static void multiLock(Run r) throws Exception {
        String pa = "/curator/multi/a", pb = "/curator/multi/b";
        CuratorFramework ca = r.client(), cb = r.client(), cc = r.client();
        InterProcessMultiLock multi = new InterProcessMultiLock(ca, Arrays.asList(pa, pb));
        r.emit("multi_acquired", multi.acquire(WAIT_MS, TimeUnit.MILLISECONDS));
        r.emit("a_while_multi", new InterProcessMutex(cb, pa).acquire(DENIED_MS, TimeUnit.MILLISECONDS));
        r.emit("b_while_multi", new InterProcessMutex(cb, pb).acquire(DENIED_MS, TimeUnit.MILLISECONDS));
        multi.release();
        InterProcessMutex onlyA = new InterProcessMutex(cb, pa);
        r.emit("a_after_multi", onlyA.acquire(WAIT_MS, TimeUnit.MILLISECONDS));
        onlyA.release();

        // With b held elsewhere the multi lock fails as a whole and gives
        // back the a it had taken.
        InterProcessMutex holdB = new InterProcessMutex(cb, pb);
        if (!holdB.acquire(WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("acquire " + pb);
        }
        r.emit("multi_while_b_held", multi.acquire(DENIED_MS, TimeUnit.MILLISECONDS));
        InterProcessMutex otherA = new InterProcessMutex(cc, pa);
        r.emit("a_after_failed_multi", otherA.acquire(WAIT_MS, TimeUnit.MILLISECONDS));
        otherA.release();
        holdB.release();
        r.emit("multi_after_b_released", multi.acquire(WAIT_MS, TimeUnit.MILLISECONDS));
        multi.release();
        r.emit("lock_nodes_after", childCount(ca, pa) + childCount(ca, pb));
    }

    static void semaphore(Run r) throws Exception {
        String path = "/curator/semaphore";
        int maxLeases = 3;
        InterProcessSemaphoreV2 a = new InterProcessSemaphoreV2(r.client(), path, maxLeases);
        InterProcessSemaphoreV2 b = new InterProcessSemaphoreV2(r.client(), path, maxLeases);
        Collection<Lease> all = a.acquire(maxLeases, WAIT_MS, TimeUnit.MILLISECONDS);
        r.emit("all_leases", all == null ? 0 : all.size());
        r.emit("extra_while_full", b.acquire(DENIED_MS, TimeUnit.MILLISECONDS) != null);
        if (all != null) {
            a.returnAll(all);
        }
        Lease one = b.acquire(WAIT_MS, TimeUnit.MILLISECONDS);
        r.emit("extra_after_return", one != null);
        if (one != null) {
            b.returnLease(one);
        }

        AtomicInteger leases = new AtomicInteger(), maxSeen = new AtomicInteger(), acquired = new AtomicInteger();
        int threads = 6, each = 5;
        CuratorFramework[] clients = new CuratorFramework[threads];
        for (int i = 0; i < threads; i++) {
            clients[i] = r.client();
        }
        r.parallel(threads, i -> {
            InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(clients[i], path, maxLeases);
            for (int n = 0; n < each; n++) {
                Lease l = s.acquire(WAIT_MS, TimeUnit.MILLISECONDS);
                if (l == null) {
                    throw new TimeoutException("acquire lease");
                }
                try {
                    max(maxSeen, leases.incrementAndGet());
                    acquired.incrementAndGet();
                    Thread.sleep(10);
                    leases.decrementAndGet();
                } finally {
                    s.returnLease(l);
                }
            }
        });
        r.emit("acquired", acquired.get());
        r.emit("max_leases", maxSeen.get());
        r.emit("lease_nodes_after", childCount(r.client(), path + "/leases"));
    }

    // ---- leaders ----

    static void leaderLatch(Run r) throws Exception {
        String path = "/curator/leader-latch";
        int n = 3;
        CuratorFramework[] clients = new CuratorFramework[n];
        LeaderLatch[] latches = new LeaderLatch[n];
        boolean[] gone = new boolean[n]; // written by this thread only, read by the sampler
        for (int i = 0; i < n; i++) {
            clients[i] = r.client();
            latches[i] = r.own(new LeaderLatch(clients[i], path, "latch-" + i));
        }
        // Samples how many live participants think they lead, all along.
        AtomicBoolean sampling = new AtomicBoolean(true);
        AtomicInteger maxLeaders = new AtomicInteger();
        Thread sampler = new Thread(() -> {
            while (sampling.get()) {
                int leaders = 0;
                for (int i = 0; i < n; i++) {
                    synchronized (gone) {
                        if (!gone[i] && latches[i].hasLeadership()) {
                            leaders++;
                        }
                    }
                }
                max(maxLeaders, leaders);
                try {
                    Thread.sleep(2);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        sampler.setDaemon(true);
        sampler.start();
        try {
            for (LeaderLatch l : latches) {
                l.start();
            }
            List<String> order = new ArrayList<>();
            for (int round = 0; round < n; round++) {
                int leader = awaitLatchLeader(latches, gone);
                order.add(latches[leader].getId());
                // Every live participant names the same leader.
                for (int i = 0; i < n; i++) {
                    if (!gone[i]) {
                        int j = i;
                        waitFor("leader id agreement", () -> {
                            try {
                                return latches[j].getLeader().getId().equals(latches[leader].getId());
                            } catch (Exception e) {
                                return false;
                            }
                        });
                    }
                }
                synchronized (gone) {
                    gone[leader] = true;
                }
                if (round == 0) {
                    latches[leader].close(); // gives up leadership
                } else {
                    clients[leader].close(); // ends the session: its node is ephemeral
                }
            }
            r.emit("leaders", String.join(",", order));
        } finally {
            sampling.set(false);
            sampler.join(WAIT_MS);
        }
        r.emit("max_simultaneous_leaders", maxLeaders.get());
    }

    static int awaitLatchLeader(LeaderLatch[] latches, boolean[] gone) throws Exception {
        int[] found = {-1};
        waitFor("leader", () -> {
            int count = 0;
            for (int i = 0; i < latches.length; i++) {
                if (!gone[i] && latches[i].hasLeadership()) {
                    count++;
                    found[0] = i;
                }
            }
            return count == 1;
        });
        return found[0];
    }

    static void leaderSelector(Run r) throws Exception {
        String path = "/curator/leader-selector";
        int n = 3;
        CuratorFramework[] clients = new CuratorFramework[n];
        LeaderSelector[] selectors = new LeaderSelector[n];
        AtomicBoolean[] deposed = new AtomicBoolean[n];
        AtomicInteger active = new AtomicInteger(), maxActive = new AtomicInteger();
        BlockingQueue<Integer> took = new LinkedBlockingQueue<>();
        for (int i = 0; i < n; i++) {
            int index = i;
            deposed[i] = new AtomicBoolean();
            clients[i] = r.client();
            selectors[i] = r.own(new LeaderSelector(clients[i], path, new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework c) throws Exception {
                    max(maxActive, active.incrementAndGet());
                    took.add(index);
                    try {
                        new CountDownLatch(1).await(); // lead until interrupted
                    } finally {
                        if (deposed[index].compareAndSet(false, true)) {
                            active.decrementAndGet();
                        }
                    }
                }
            }));
            selectors[i].setId("selector-" + i);
        }
        for (LeaderSelector s : selectors) {
            s.start();
        }
        List<String> order = new ArrayList<>();
        for (int round = 0; round < n; round++) {
            Integer leader = took.poll(WAIT_MS, TimeUnit.MILLISECONDS);
            if (leader == null) {
                throw new TimeoutException("no leader in round " + round);
            }
            order.add("selector-" + leader);
            int l = leader;
            for (int i = 0; i < n; i++) {
                if (!deposed[i].get()) {
                    int j = i;
                    waitFor("leader id agreement", () -> {
                        try {
                            return selectors[j].getLeader().getId().equals("selector-" + l);
                        } catch (Exception e) {
                            return false;
                        }
                    });
                }
            }
            // Counted out before it goes: a client closed under it may
            // never interrupt its takeLeadership.
            if (deposed[l].compareAndSet(false, true)) {
                active.decrementAndGet();
            }
            if (round == 0) {
                selectors[l].close();
            } else {
                clients[l].close();
            }
        }
        r.emit("leaders", String.join(",", order));
        r.emit("max_simultaneous_leaders", maxActive.get());
        r.emit("extra_leaderships", took.size());
    }

    // ---- shared values ----

    static void sharedCount(Run r) throws Exception {
        String path = "/curator/shared-count";
        SharedCount a = r.own(new SharedCount(r.client(), path, 0));
        SharedCount b = r.own(new SharedCount(r.client(), path, 0));
        BlockingQueue<Integer> seen = new LinkedBlockingQueue<>();
        b.addListener(new SharedCountListener() {
            @Override
            public void countHasChanged(SharedCountReader reader, int newCount) {
                seen.add(newCount);
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState s) {
            }
        });
        a.start();
        b.start();
        a.setCount(5);
        Integer v = seen.poll(WAIT_MS, TimeUnit.MILLISECONDS);
        r.emit("listener_saw", v);
        waitFor("count 5 at b", () -> b.getCount() == 5);
        VersionedValue<Integer> stale = b.getVersionedValue();
        a.setCount(7);
        r.emit("stale_set", b.trySetCount(stale, 100));
        waitFor("count 7 at b", () -> b.getCount() == 7);

        int threads = 4, each = 25;
        AtomicInteger attempts = new AtomicInteger();
        SharedCount[] counts = new SharedCount[threads];
        for (int i = 0; i < threads; i++) {
            counts[i] = r.own(new SharedCount(r.client(), path, 0));
            counts[i].start();
        }
        r.parallel(threads, i -> {
            for (int n = 0; n < each; n++) {
                for (int tries = 0; ; tries++) {
                    if (tries > 10_000) {
                        throw new IllegalStateException("trySetCount never succeeded");
                    }
                    attempts.incrementAndGet();
                    VersionedValue<Integer> cur = counts[i].getVersionedValue();
                    if (counts[i].trySetCount(cur, cur.getValue() + 1)) {
                        break;
                    }
                }
            }
        });
        byte[] raw = r.client().getData().forPath(path);
        r.emit("final", raw.length == 4 ? ByteBuffer.wrap(raw).getInt() : -1);
        r.emit("attempts", attempts.get());
    }

    static void atomicLong(Run r) throws Exception {
        String path = "/curator/atomic-long/value", lock = "/curator/atomic-long/lock";
        int threads = 5, each = 40;
        AtomicInteger ok = new AtomicInteger(), failed = new AtomicInteger();
        CuratorFramework[] clients = new CuratorFramework[threads];
        for (int i = 0; i < threads; i++) {
            clients[i] = r.client();
        }
        r.parallel(threads, i -> {
            DistributedAtomicLong v = new DistributedAtomicLong(clients[i], path, new RetryNTimes(20, 5),
                    PromotedToLock.builder().lockPath(lock).retryPolicy(new RetryNTimes(20, 5))
                            .timeout(WAIT_MS, TimeUnit.MILLISECONDS).build());
            for (int n = 0; n < each; n++) {
                AtomicValue<Long> res = v.increment();
                (res.succeeded() ? ok : failed).incrementAndGet();
            }
        });
        DistributedAtomicLong v = new DistributedAtomicLong(r.client(), path, new RetryNTimes(3, 10));
        r.emit("succeeded", ok.get());
        r.emit("failed", failed.get());
        r.emit("final", v.get().postValue());
        r.emit("cas_matching", v.compareAndSet((long) ok.get(), 1000L).succeeded());
        r.emit("cas_stale", v.compareAndSet(5L, 6L).succeeded());
        r.emit("after_cas", v.get().postValue());
    }

    // ---- creates ----

    static void containers(Run r) throws Exception {
        CuratorFramework c = r.client();
        c.create().creatingParentContainersIfNeeded().forPath("/curator-ctr/a/b/leaf", bytes("x"));
        r.emit("parent_ephemeral_owner", c.checkExists().forPath("/curator-ctr/a/b").getEphemeralOwner());
        c.create().creatingParentsIfNeeded().forPath("/curator-plain/a/leaf");
        c.create().withMode(CreateMode.CONTAINER).forPath("/curator-never-used");
        long start = System.currentTimeMillis();
        c.delete().forPath("/curator-ctr/a/b/leaf");
        c.delete().forPath("/curator-plain/a/leaf");
        String[] parents = {"/curator-ctr/a/b", "/curator-ctr/a", "/curator-ctr"};
        boolean removed = true;
        try {
            waitFor("container parents removed", () -> {
                try {
                    for (String p : parents) {
                        if (c.checkExists().forPath(p) != null) {
                            return false;
                        }
                    }
                    return true;
                } catch (Exception e) {
                    return false;
                }
            });
        } catch (TimeoutException e) {
            removed = false;
        }
        r.emit("container_parents_removed", removed);
        r.emit("removed_after_ms", System.currentTimeMillis() - start);
        List<String> left = new ArrayList<>();
        for (String p : parents) {
            if (c.checkExists().forPath(p) != null) {
                left.add(p);
            }
        }
        r.emit("containers_left", String.join(",", left));
        r.emit("plain_parent_kept", c.checkExists().forPath("/curator-plain/a") != null);
        // A container that never had a child is not a candidate.
        r.emit("unused_container_kept", c.checkExists().forPath("/curator-never-used") != null);
    }

    static void protection(Run r) throws Exception {
        CuratorFramework c = r.client();
        long session = c.getZookeeperClient().getZooKeeper().getSessionId();
        c.create().forPath("/curator-prot");
        String first = c.create().withProtection().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath("/curator-prot/job-", bytes("one"));
        String second = c.create().withProtection().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath("/curator-prot/job-", bytes("two"));
        String plain = c.create().withProtection().forPath("/curator-prot/plain", bytes("three"));
        r.emit("first", ZKPaths.getNodeFromPath(first));
        r.emit("second", ZKPaths.getNodeFromPath(second));
        r.emit("plain", ZKPaths.getNodeFromPath(plain));
        r.emit("first_normalized", ProtectedUtils.normalize(ZKPaths.getNodeFromPath(first)));
        r.emit("first_is_protected", ProtectedUtils.isProtectedZNode(ZKPaths.getNodeFromPath(first)));
        Stat st = c.checkExists().forPath(first);
        r.emit("first_owned_by_session", st != null && st.getEphemeralOwner() == session);
        r.emit("first_data", new String(c.getData().forPath(first), StandardCharsets.UTF_8));
        List<String> children = c.getChildren().forPath("/curator-prot");
        children.sort(null);
        r.emit("children", String.join(",", children));
    }

    public static void main(String[] args) throws Exception {
        connect = args[0];
        Map<String, Scenario> all = new LinkedHashMap<>();
        for (Scenario s : List.of(
                new Scenario("mutex-reentrant", 60, CuratorCheck::mutexReentrant),
                new Scenario("mutex-stock", 150, CuratorCheck::mutexStock),
                new Scenario("semaphore-mutex", 60, CuratorCheck::semaphoreMutex),
                new Scenario("read-write-lock", 90, CuratorCheck::readWriteLock),
                new Scenario("multi-lock", 60, CuratorCheck::multiLock),
                new Scenario("semaphore", 90, CuratorCheck::semaphore),
                new Scenario("leader-latch", 90, CuratorCheck::leaderLatch),
                new Scenario("leader-selector", 90, CuratorCheck::leaderSelector),
                new Scenario("shared-count", 90, CuratorCheck::sharedCount),
                new Scenario("atomic-long", 90, CuratorCheck::atomicLong),
                new Scenario("containers", 60, CuratorCheck::containers),
                new Scenario("protection", 60, CuratorCheck::protection))) {
            all.put(s.name(), s);
        }
        List<Scenario> chosen = new ArrayList<>();
        if (args.length > 1) {
            for (String name : Arrays.copyOfRange(args, 1, args.length)) {
                Scenario s = all.get(name);
                if (s == null) {
                    System.err.println("unknown scenario " + name + "; known: " + all.keySet());
                    System.exit(2);
                }
                chosen.add(s);
            }
        } else {
            chosen.addAll(all.values());
        }
        for (Scenario s : chosen) {
            runOne(s);
        }
        System.exit(0); // recipe threads left behind by a failed scenario must not keep us alive
    }

    static void runOne(Scenario s) {
        Run r = new Run(s.name());
        ExecutorService ex = Executors.newSingleThreadExecutor(task -> {
            Thread t = new Thread(task, s.name());
            t.setDaemon(true);
            return t;
        });
        long start = System.currentTimeMillis();
        Future<?> f = ex.submit(() -> {
            s.body().run(r);
            return null;
        });
        try {
            f.get(s.limitSeconds(), TimeUnit.SECONDS);
            r.emit("elapsed_ms", System.currentTimeMillis() - start);
            r.emit("done", true);
        } catch (TimeoutException e) {
            f.cancel(true);
            r.emit("error", "timed out after " + s.limitSeconds() + "s");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            cause.printStackTrace();
            r.emit("error", cause.toString());
        } catch (InterruptedException e) {
            r.emit("error", "interrupted");
        } finally {
            ex.shutdownNow();
            r.close();
        }
    }
}
