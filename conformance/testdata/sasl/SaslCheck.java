import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;

/**
 * Logs in to a ZooKeeper-compatible server with SASL DIGEST-MD5 through the
 * JAAS "Client" section given by -Djava.security.auth.login.config; used by
 * TestSASL. Usage: SaslCheck HOST:PORT login|refused
 *
 * login: waits for SaslAuthenticated, creates /sasl-bob with ACL
 * sasl:bob:cdrwa, reads it back, then a second client with SASL turned off
 * tries to read it. refused: waits for AuthFailed and tries a request.
 * Prints key=value lines; it asserts nothing itself.
 */
public class SaslCheck {
    static final long WAIT_MS = 20_000;

    public static void main(String[] args) throws Exception {
        String addr = args[0];
        BlockingQueue<WatchedEvent> events = new LinkedBlockingQueue<>();
        ZooKeeper zk = new ZooKeeper(addr, 30_000, events::add);
        try {
            String end = args[1].equals("login") ? "SaslAuthenticated" : "AuthFailed";
            List<String> seen = awaitState(events, end);
            System.out.println("events=" + String.join(",", seen));
            if (args[1].equals("login")) {
                login(zk, addr);
            } else {
                refused(zk, events);
            }
        } finally {
            zk.close();
        }
        System.out.println("done=true");
    }

    /** Session states the watcher saw, up to and including end. */
    static List<String> awaitState(BlockingQueue<WatchedEvent> events, String end) throws InterruptedException {
        List<String> seen = new ArrayList<>();
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (true) {
            WatchedEvent ev = events.poll(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
            if (ev == null) {
                seen.add("timeout");
                return seen;
            }
            seen.add(ev.getState().name());
            if (ev.getState().name().equals(end)) {
                return seen;
            }
        }
    }

    static void login(ZooKeeper zk, String addr) throws Exception {
        List<ACL> bobOnly = Collections.singletonList(new ACL(ZooDefs.Perms.ALL, new Id("sasl", "bob")));
        System.out.println("create=" + attempt(() -> zk.create("/sasl-bob", "mine".getBytes("UTF-8"), bobOnly, CreateMode.PERSISTENT)));
        System.out.println("get=" + attempt(() -> new String(zk.getData("/sasl-bob", false, new Stat()), "UTF-8")));
        System.out.println("acl=" + attempt(() -> zk.getACL("/sasl-bob", new Stat()).toString().replaceAll("\\s+", " ")));
        System.out.println("whoami=" + attempt(() -> whoAmI(zk)));

        ZKClientConfig noSasl = new ZKClientConfig();
        noSasl.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "false");
        BlockingQueue<WatchedEvent> otherEvents = new LinkedBlockingQueue<>();
        ZooKeeper other = new ZooKeeper(addr, 30_000, otherEvents::add, noSasl);
        try {
            System.out.println("other.events=" + String.join(",", awaitState(otherEvents, "SyncConnected")));
            System.out.println("other.get=" + attempt(() -> new String(other.getData("/sasl-bob", false, new Stat()), "UTF-8")));
            System.out.println("other.whoami=" + attempt(() -> whoAmI(other)));
        } finally {
            other.close();
        }
    }

    static void refused(ZooKeeper zk, BlockingQueue<WatchedEvent> events) throws Exception {
        System.out.println("state=" + zk.getState());
        System.out.println("exists=" + attempt(() -> String.valueOf(zk.exists("/", false) != null)));
        WatchedEvent next = events.poll(1, TimeUnit.SECONDS);
        System.out.println("next_event=" + (next == null ? "none" : next.getState().name()));
    }

    static String whoAmI(ZooKeeper zk) throws Exception {
        List<String> ids = new ArrayList<>();
        for (ClientInfo ci : zk.whoAmI()) {
            ids.add(ci.getAuthScheme() + ":" + ci.getUser());
        }
        return String.join(",", ids);
    }

    interface Call {
        String run() throws Exception;
    }

    /** The call's result, or the KeeperException code it failed with. */
    static String attempt(Call c) {
        try {
            return c.run();
        } catch (KeeperException e) {
            return e.code().name();
        } catch (Exception e) {
            return e.getClass().getSimpleName();
        }
    }
}
