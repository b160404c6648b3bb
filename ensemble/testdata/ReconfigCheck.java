// ReconfigCheck changes a running ensemble's membership from Java, as an
// operator's tool would, and watches Curator follow it; used by
// TestJavaReconfig.
//
// Usage: java ReconfigCheck CONNECT JOINING LEAVING OBSERVER WANT
//
//   CONNECT   the ensemble's members, host:port,...
//   JOINING   a server.N=...:observer;host:port line for ZooKeeperAdmin to add
//   LEAVING   the id of a participant for ZooKeeperAdmin to remove
//   OBSERVER  the joining observer's client address
//   WANT      the client addresses the configuration names at the end,
//             comma-separated, in any order
//
// It prints one observation a line, "key<TAB>value"; the Go test decides
// what the values must be. Every wait has a deadline, and a failure prints
// "error<TAB>message" and exits 1.

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.admin.ZooKeeperAdmin;
import org.apache.zookeeper.data.Stat;

public class ReconfigCheck {
    static final long WAIT_MS = 60_000;

    static void print(String key, Object value) {
        System.out.println(key + "\t" + String.valueOf(value).replace("\n", "|"));
        System.out.flush();
    }

    static Set<String> addresses(String connect) {
        return new HashSet<>(Arrays.asList(connect.split(",")));
    }

    interface Check {
        boolean ok() throws Exception;
    }

    static void await(String what, Check c) throws Exception {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!c.ok()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out waiting for " + what);
            }
            Thread.sleep(100);
        }
    }

    static <T extends ZooKeeper> T connected(T zk, CountDownLatch up, String what) throws Exception {
        if (!up.await(WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("no session with " + what);
        }
        return zk;
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0], joining = args[1], leaving = args[2], observer = args[3];
        Set<String> want = addresses(args[4]);
        try {
            run(connect, joining, leaving, observer, want);
        } catch (Exception e) {
            print("error", e);
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(String connect, String joining, String leaving, String observer, Set<String> want) throws Exception {
        CountDownLatch adminUp = new CountDownLatch(1);
        ZooKeeperAdmin admin = connected(new ZooKeeperAdmin(connect, 10_000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                adminUp.countDown();
            }
        }), adminUp, connect);
        admin.addAuthInfo("digest", "super:test".getBytes(StandardCharsets.UTF_8));

        CuratorFramework curator = CuratorFrameworkFactory.builder()
            .connectString(connect)
            .ensembleTracker(true)
            .sessionTimeoutMs(10_000)
            .retryPolicy(new RetryNTimes(40, 250))
            .build();
        curator.start();
        if (!curator.blockUntilConnected((int) WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("Curator did not connect");
        }
        print("curator.initial", curator.getZookeeperClient().getCurrentConnectionString());

        Stat stat = new Stat();
        byte[] added = admin.reconfigure(joining, null, null, -1, stat);
        print("add.config", new String(added, StandardCharsets.UTF_8));
        print("add.stat", stat.getVersion() + " " + stat.getAversion() + " " + stat.getDataLength() + " " + Long.toHexString(stat.getMzxid()));

        // The observer serves once it has caught up: a session on it alone
        // writes (forwarded to the leader) and reads what it wrote.
        CountDownLatch obsUp = new CountDownLatch(1);
        ZooKeeper obs = connected(new ZooKeeper(observer, 10_000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                obsUp.countDown();
            }
        }), obsUp, observer);
        await("a write through the observer", () -> {
            try {
                obs.create("/through-observer", "o".getBytes(StandardCharsets.UTF_8), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                return true;
            } catch (KeeperException.NodeExistsException e) {
                return true;
            } catch (KeeperException.ConnectionLossException e) {
                return false;
            }
        });
        print("observer.read", new String(obs.getData("/through-observer", false, null), StandardCharsets.UTF_8));
        print("observer.config", new String(obs.getConfig(false, null), StandardCharsets.UTF_8));
        obs.close();

        byte[] removed = admin.reconfigure(null, leaving, null, -1, stat);
        print("remove.config", new String(removed, StandardCharsets.UTF_8));

        // Curator's EnsembleTracker watches /zookeeper/config and makes the
        // members' client addresses its connect string.
        await("Curator's connect string to name " + want, () -> addresses(curator.getZookeeperClient().getCurrentConnectionString()).equals(want));
        print("curator.final", curator.getZookeeperClient().getCurrentConnectionString());
        curator.create().forPath("/through-curator", "c".getBytes(StandardCharsets.UTF_8));
        print("curator.read", new String(curator.getData().forPath("/through-curator"), StandardCharsets.UTF_8));
        curator.close();
        admin.close();
        print("done", true);
    }
}
