import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;

// Drives a server's TLS client port with the Java client (Netty, PEM key
// and trust stores from the zookeeper.ssl.* system properties) and prints
// one "key=value" line per observation:
//   java TlsCheck <secure host:port> <plain host:port> <other pem> <odd pem>
// The plain port is used without TLS to try "addauth x509" there.
public class TlsCheck {
    static void out(String key, Object value) {
        System.out.println(key + "=" + value);
        System.out.flush();
    }

    static ZooKeeper connect(String addr, ZKClientConfig conf) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(addr, 10000, e -> {
            if (e.getState() == KeeperState.SyncConnected) {
                connected.countDown();
            }
        }, conf);
        if (!connected.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no session with " + addr);
        }
        return zk;
    }

    static String who(ZooKeeper zk) throws Exception {
        List<String> ids = new ArrayList<>();
        for (ClientInfo ci : zk.whoAmI()) {
            ids.add(ci.getAuthScheme() + ":" + ci.getUser());
        }
        return String.join(" ", ids);
    }

    static String acl(List<ACL> acl) {
        List<String> s = new ArrayList<>();
        for (ACL a : acl) {
            s.add(a.getId().getScheme() + ":" + a.getId().getId() + ":" + a.getPerms());
        }
        return String.join(" ", s);
    }

    static String code(KeeperException e) {
        return e.code().name();
    }

    public static void main(String[] args) throws Exception {
        String secure = args[0], plain = args[1], otherKeyStore = args[2];
        ZKClientConfig tls = new ZKClientConfig();
        ZooKeeper zk = connect(secure, tls);
        String me = null;
        for (ClientInfo ci : zk.whoAmI()) {
            if (ci.getAuthScheme().equals("x509")) {
                me = ci.getUser();
            }
        }
        out("whoami", who(zk));
        out("identity", me);

        out("create", zk.create("/tls", "hello".getBytes(), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT));
        out("get", new String(zk.getData("/tls", false, null)));

        zk.create("/tls-auth", "a".getBytes(), ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
        out("auth-acl", acl(zk.getACL("/tls-auth", null)));

        List<ACL> mine = Collections.singletonList(new ACL(ZooDefs.Perms.ALL, new Id("x509", me)));
        zk.create("/tls-x509", "x".getBytes(), mine, CreateMode.PERSISTENT);
        out("x509-acl", acl(zk.getACL("/tls-x509", null)));
        out("x509-get-owner", new String(zk.getData("/tls-x509", false, null)));

        try {
            zk.setACL("/tls", Collections.singletonList(new ACL(ZooDefs.Perms.ALL, new Id("x509", "not a name"))), -1);
            out("bad-x509-acl", "OK");
        } catch (KeeperException e) {
            out("bad-x509-acl", code(e));
        }

        // addauth x509 where the certificate already authenticated.
        zk.addAuthInfo("x509", "whatever".getBytes());
        out("addauth-x509-tls", who(zk));

        // Another certificate from the same CA: its own identity, refused.
        System.setProperty("zookeeper.ssl.keyStore.location", otherKeyStore);
        ZooKeeper other = connect(secure, new ZKClientConfig());
        out("other-whoami", who(other));
        try {
            other.getData("/tls-x509", false, null);
            out("x509-get-other", "OK");
        } catch (KeeperException e) {
            out("x509-get-other", code(e));
        }
        other.close();

        // A subject whose RFC 2253 form needs escapes, OIDs and hex.
        System.setProperty("zookeeper.ssl.keyStore.location", args[3]);
        ZooKeeper odd = connect(secure, new ZKClientConfig());
        out("odd-whoami", who(odd));
        odd.close();

        // The plain port: no certificate, so no x509 identity, and addauth
        // x509 fails the session's authentication.
        ZKClientConfig noTLS = new ZKClientConfig();
        noTLS.setProperty(ZKClientConfig.SECURE_CLIENT, "false");
        noTLS.setProperty(ZKClientConfig.ZOOKEEPER_CLIENT_CNXN_SOCKET, "org.apache.zookeeper.ClientCnxnSocketNIO");
        CountDownLatch authFailed = new CountDownLatch(1);
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper p = new ZooKeeper(plain, 10000, e -> {
            if (e.getState() == KeeperState.SyncConnected) {
                connected.countDown();
            }
            if (e.getState() == KeeperState.AuthFailed) {
                authFailed.countDown();
            }
        }, noTLS);
        if (!connected.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no session with " + plain);
        }
        out("plain-whoami", who(p));
        try {
            p.getData("/tls-x509", false, null);
            out("x509-get-plain", "OK");
        } catch (KeeperException e) {
            out("x509-get-plain", code(e));
        }
        p.addAuthInfo("x509", "CN=client".getBytes());
        out("addauth-x509-plain", authFailed.await(30, TimeUnit.SECONDS) ? "AuthFailed" : "no AuthFailed event");
        try {
            p.exists("/", false);
            out("after-addauth-plain", "OK");
        } catch (KeeperException e) {
            out("after-addauth-plain", code(e));
        }
        p.close();

        zk.close();
        out("done", "true");
    }
}
