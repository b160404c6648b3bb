// CuratorFailover sells stock under Apache Curator's InterProcessMutex from
// several clients, each with its own session, while the Go test kills the
// ensemble's leader; used by TestEnsembleCuratorMutexFailover.
//
// Usage: java CuratorFailover CONNECT LOCK_PATH STOCK_PATH CLIENTS DEADLINE_SECONDS
//
// The stock node holds "<value>" or "<value>:<client>:<n>". Each decrement
// is a versioned setData of a value tagged with its client and attempt, so
// after a lost reply (or a BadVersion from Curator re-sending a set that had
// landed) the client reads the node back and knows whether its own write is
// there: exactly one decrement per landed write, however often it retried.
//
// Output, one line each, fields separated by spaces:
//
//	ready CLIENTS                      every client has a session
//	decrement CLIENT STOCK             a decrement landed, leaving STOCK
//	state CLIENT STATE SESSION         a Curator connection state change
//	error CLIENT WHERE EXCEPTION       a failure the client rode out
//	reopen CLIENT                      a client replaced after acquire failed inside Curator
//	violation CLIENT MESSAGE           the lock or the stock went wrong
//	summary KEY=VALUE...               last line
//
// Every wait has a deadline, so a server that never answers ends the run
// with a summary rather than a hang.

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public final class CuratorFailover {
    /** Session timeout: long enough to outlive an election. */
    static final int SESSION_MS = 15_000;
    /** How long an operation waits for a connection before Curator retries it. */
    static final int CONNECTION_MS = 5_000;
    /** One acquire, or one sync; a miss is retried until the deadline. */
    static final long WAIT_MS = 20_000;
    /** Pause after a failure Curator gave up on, so an instant error cannot spin. */
    static final long BACKOFF_MS = 50;

    static String connect, lockPath, stockPath;
    static volatile long deadline; // System.nanoTime()

    static final AtomicInteger holders = new AtomicInteger(), maxHolders = new AtomicInteger();
    static final AtomicInteger decrements = new AtomicInteger(), errors = new AtomicInteger();
    static final AtomicInteger violations = new AtomicInteger(), acquireTimeouts = new AtomicInteger();
    static final AtomicInteger suspended = new AtomicInteger(), lost = new AtomicInteger();
    static final AtomicInteger finished = new AtomicInteger(), reopened = new AtomicInteger();

    /** The lock or the stock misbehaved: the run's claim is broken. */
    static final class Violation extends Exception {
        Violation(String message) {
            super(message);
        }
    }

    static void emit(String line) {
        synchronized (System.out) {
            System.out.println(line.replace('\n', ' ').replace('\r', ' '));
            System.out.flush();
        }
    }

    static void error(int client, String where, Exception e) throws InterruptedException {
        errors.incrementAndGet();
        emit("error " + client + " " + where + " " + e);
        if (!(e instanceof KeeperException)) {
            e.printStackTrace(); // not the server's answer: show where it came from
        }
        Thread.sleep(BACKOFF_MS);
    }

    static boolean expired() {
        return System.nanoTime() - deadline > 0;
    }

    static void checkDeadline(String what) throws Violation {
        if (expired()) {
            throw new Violation("deadline passed during " + what);
        }
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static CuratorFramework client(String connect, int id) {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(SESSION_MS)
                .connectionTimeoutMs(CONNECTION_MS)
                // Up to 20 tries, each waiting CONNECTION_MS for a server:
                // far more than an election takes.
                .retryPolicy(new ExponentialBackoffRetry(100, 20, 1_000))
                .build();
        c.getConnectionStateListenable().addListener((cl, state) -> {
            String session = "?";
            try {
                session = "0x" + Long.toHexString(cl.getZookeeperClient().getZooKeeper().getSessionId());
            } catch (Exception e) {
                // no session to name
            }
            emit("state " + id + " " + state + " " + session);
            if (state == ConnectionState.SUSPENDED) {
                suspended.incrementAndGet();
            } else if (state == ConnectionState.LOST) {
                lost.incrementAndGet();
            }
        });
        c.start();
        return c;
    }

    /**
     * Waits for the client's server to catch up with the leader, so the read
     * that follows sees every write committed before it.
     */
    static void sync(CuratorFramework c) throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        AtomicInteger rc = new AtomicInteger();
        c.sync().inBackground((cl, event) -> {
            rc.set(event.getResultCode());
            done.countDown();
        }).forPath(stockPath);
        if (!done.await(WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new KeeperException.OperationTimeoutException();
        }
        if (rc.get() != 0) {
            throw KeeperException.create(KeeperException.Code.get(rc.get()), stockPath);
        }
    }

    /** Reads the stock after a sync, retrying every failure but an expired session. */
    static String read(int client, CuratorFramework c, Stat st) throws Exception {
        for (;;) {
            checkDeadline("read stock");
            try {
                sync(c);
                return new String(c.getData().storingStatIn(st).forPath(stockPath), StandardCharsets.UTF_8);
            } catch (KeeperException.SessionExpiredException e) {
                throw e;
            } catch (KeeperException e) {
                error(client, "read", e);
            }
        }
    }

    static int valueOf(String data) {
        int colon = data.indexOf(':');
        return Integer.parseInt(colon < 0 ? data : data.substring(0, colon));
    }

    /**
     * Lowers the stock by one and returns what is left, or -1 if the stock
     * was already 0. It returns only when it knows whether its write landed.
     */
    static int decrement(int client, CuratorFramework c, long n) throws Exception {
        Stat st = new Stat();
        int value = valueOf(read(client, c, st));
        if (value == 0) {
            return -1;
        }
        String want = (value - 1) + ":" + client + ":" + n;
        int version = st.getVersion();
        for (;;) {
            checkDeadline("set stock");
            try {
                c.setData().withVersion(version).forPath(stockPath, bytes(want));
                return value - 1;
            } catch (KeeperException.SessionExpiredException e) {
                throw e;
            } catch (KeeperException e) {
                // BadVersion is what a re-sent set that had landed gets.
                if (!(e instanceof KeeperException.BadVersionException)) {
                    error(client, "set", e);
                }
            }
            String now = read(client, c, st);
            if (now.equals(want) && st.getVersion() == version + 1) {
                return value - 1; // the lost set landed
            }
            if (st.getVersion() != version) {
                throw new Violation("stock changed under the lock: read \"" + now + "\" at version "
                        + st.getVersion() + ", had version " + version + " and wrote \"" + want + "\"");
            }
        }
    }

    /**
     * One client: lock, decrement, unlock, until the stock is gone. It works
     * on clients[client], which it replaces if Curator leaves a lock node
     * behind (see reopen).
     */
    static void work(int client, CuratorFramework[] clients) throws InterruptedException {
        CuratorFramework c = clients[client];
        InterProcessMutex mutex = new InterProcessMutex(c, lockPath);
        long n = 0;
        while (!expired()) {
            try {
                long wait = Math.min(WAIT_MS, Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
                if (!mutex.acquire(wait, TimeUnit.MILLISECONDS)) {
                    acquireTimeouts.incrementAndGet();
                    emit("error " + client + " acquire timed-out");
                    continue;
                }
            } catch (KeeperException e) {
                error(client, "acquire", e);
                continue;
            } catch (Exception e) {
                error(client, "acquire", e);
                c = reopen(client, clients);
                mutex = new InterProcessMutex(c, lockPath);
                continue;
            }
            int left;
            try {
                maxHolders.accumulateAndGet(holders.incrementAndGet(), Math::max);
                left = decrement(client, c, ++n);
                if (left >= 0) {
                    decrements.incrementAndGet();
                    emit("decrement " + client + " " + left);
                }
            } catch (Violation e) {
                violations.incrementAndGet();
                emit("violation " + client + " " + e.getMessage());
                return;
            } catch (Exception e) {
                // An expired session (the lock is gone with it) or a bug here.
                violations.incrementAndGet();
                emit("violation " + client + " while holding the lock: " + e);
                return;
            } finally {
                holders.decrementAndGet();
                try {
                    mutex.release();
                } catch (Exception e) {
                    // Curator retries the delete in the background (guaranteed).
                    error(client, "release", e);
                }
            }
            if (left < 0) {
                finished.incrementAndGet();
                return;
            }
        }
    }

    /**
     * Replaces clients[client] with a new client, closing the old session.
     *
     * Curator 5.4's protected create can return null instead of a path: its
     * nested retry loops share one thread-local RetryLoop, so the inner
     * loop of findProtectedNodeInForeground marks the outer one complete,
     * and a second connection loss of the same create then ends the outer
     * loop with no result. InterProcessMutex.acquire then fails with
     * "Path cannot be null" and does not delete the lock node, which may
     * exist (the create can land after its reply was lost) and would block
     * every other client for as long as this session lives. Closing the
     * session deletes it.
     */
    static CuratorFramework reopen(int client, CuratorFramework[] clients) throws InterruptedException {
        reopened.incrementAndGet();
        emit("reopen " + client);
        clients[client].close();
        clients[client] = client(connect, client);
        if (!clients[client].blockUntilConnected((int) WAIT_MS, TimeUnit.MILLISECONDS)) {
            emit("error " + client + " reopen not-connected");
        }
        return clients[client];
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: CuratorFailover CONNECT LOCK_PATH STOCK_PATH CLIENTS DEADLINE_SECONDS");
            System.exit(2);
        }
        connect = args[0];
        lockPath = args[1];
        stockPath = args[2];
        int n = Integer.parseInt(args[3]);
        long start = System.nanoTime();
        deadline = start + TimeUnit.SECONDS.toNanos(Long.parseLong(args[4]));

        CuratorFramework[] clients = new CuratorFramework[n];
        for (int i = 0; i < n; i++) {
            clients[i] = client(connect, i);
        }
        for (int i = 0; i < n; i++) {
            if (!clients[i].blockUntilConnected((int) WAIT_MS, TimeUnit.MILLISECONDS)) {
                emit("violation " + i + " not connected within " + WAIT_MS + "ms");
                System.exit(1);
            }
        }
        emit("ready " + n);

        Thread[] threads = new Thread[n];
        for (int i = 0; i < n; i++) {
            int id = i;
            threads[i] = new Thread(() -> {
                try {
                    work(id, clients);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "client-" + i);
            threads[i].setDaemon(true);
            threads[i].start();
        }
        int unfinished = 0;
        for (Thread t : threads) {
            // A client past the deadline ends within one Curator operation.
            t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()) + 5_000));
            if (t.isAlive()) {
                unfinished++;
            }
        }

        String fin;
        deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS); // for this last read
        try {
            fin = String.valueOf(valueOf(read(-1, clients[0], new Stat())));
        } catch (Exception e) {
            fin = "unread";
            emit("error -1 final-read " + e);
        }
        emit("summary decrements=" + decrements.get() + " max_holders=" + maxHolders.get()
                + " errors=" + errors.get() + " violations=" + violations.get()
                + " acquire_timeouts=" + acquireTimeouts.get() + " suspended=" + suspended.get()
                + " lost=" + lost.get() + " reopened=" + reopened.get() + " finished=" + finished.get() + " unfinished=" + unfinished
                + " final=" + fin + " elapsed_ms=" + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));

        // Close the sessions so their lock nodes go at once, but do not let
        // a close that cannot reach a server keep the JVM alive.
        Thread closer = new Thread(() -> {
            for (CuratorFramework c : clients) {
                c.close();
            }
        });
        closer.setDaemon(true);
        closer.start();
        closer.join(10_000);
        System.exit(0);
    }
}
