package monitor

import (
	"fmt"

	"github.com/hutchzk/hutch/membership"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// writeConf writes conf: ZooKeeperServer.dumpConf, and for an ensemble
// member QuorumZooKeeperServer's additions.
func writeConf(b *strings.Builder, v *view) {
	srv, r := v.Server, v.Replication
	data, logSize := dirSizes(v)
	fmt.Fprintf(b, "clientPort=%d\n", addrPort(srv.ClientAddr))
	fmt.Fprintf(b, "secureClientPort=%d\n", addrPort(srv.SecureAddr))
	fmt.Fprintf(b, "dataDir=%s\ndataDirSize=%d\ndataLogDir=%s\ndataLogSize=%d\n", srv.DataDir, data, srv.DataLogDir, logSize)
	fmt.Fprintf(b, "tickTime=%d\nmaxClientCnxns=%d\nminSessionTimeout=%d\nmaxSessionTimeout=%d\n",
		srv.TickTime.Milliseconds(), srv.MaxClientCnxns, srv.MinSessionTimeout.Milliseconds(), srv.MaxSessionTimeout.Milliseconds())
	b.WriteString("clientPortListenBacklog=-1\n")
	if !v.Mode.Replicated() {
		b.WriteString("serverId=0\n")
		return
	}
	fmt.Fprintf(b, "serverId=%d\n", r.NodeID)
	self, _ := r.Config.Member(r.NodeID)
	peerType := 0 // LearnerType.PARTICIPANT's ordinal
	if self.Role == membership.Observer {
		peerType = 1
	}
	fmt.Fprintf(b, "initLimit=%d\nsyncLimit=%d\nelectionAlg=3\nelectionPort=%d\nquorumPort=%d\npeerType=%d\n",
		srv.InitLimit, srv.SyncLimit, self.ElectionPort, self.QuorumPort, peerType)
	b.WriteString("membership: \n")
	b.WriteString(r.Config.Text())
	b.WriteString("\n")
}

// confJSON fills the configuration answer.
func confJSON(out map[string]any, v *view) {
	srv := v.Server
	out["client_port"] = addrPort(srv.ClientAddr)
	out["data_dir"] = srv.DataDir
	out["data_log_dir"] = srv.DataLogDir
	out["tick_time"] = srv.TickTime.Milliseconds()
	out["max_client_cnxns"] = srv.MaxClientCnxns
	out["min_session_timeout"] = srv.MinSessionTimeout.Milliseconds()
	out["max_session_timeout"] = srv.MaxSessionTimeout.Milliseconds()
	serverID := int64(0) // standalone, as ZooKeeper
	if v.Mode.Replicated() {
		serverID = int64(v.Replication.NodeID)
	}
	out["server_id"] = serverID
	out["client_port_listen_backlog"] = -1
}

// addrPort is an address's port, or -1 without one (ZooKeeper's value for
// an unset secure port).
func addrPort(addr string) int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return -1
	}
	return n
}

// dirSizes adds up the bytes under the data and log directories, as dirs
// and conf report them; a node in memory has none.
func dirSizes(v *view) (data, log int64) {
	d, l := v.Server.DataDir, v.Server.DataLogDir
	data = dirSize(d)
	if l == d {
		return data, data
	}
	return data, dirSize(l)
}

func dirSize(dir string) int64 {
	if dir == "" {
		return 0
	}
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// systemProperties are the settings ZooKeeper would hold as zookeeper.*
// system properties.
func systemProperties(v *view) map[string]string {
	props := map[string]string{
		"zookeeper.4lw.commands.whitelist": strings.Join(v.words, ","),
		"zookeeper.admin.enableServer":     "true",
	}
	if a := v.Server.AdminAddr; a != "" {
		host, port, _ := net.SplitHostPort(a)
		props["zookeeper.admin.serverAddress"] = host
		props["zookeeper.admin.serverPort"] = port
	}
	return props
}

// environment lists envi's keys in ZooKeeper's order. hutch is not a JVM:
// the java.* keys carry the Go runtime's equivalents, so tools that parse
// the list find every key.
func environment() [][2]string {
	host, _ := os.Hostname()
	exe, _ := os.Executable()
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	name := strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mb := func(n uint64) string { return strconv.FormatUint(n>>20, 10) + "MB" }
	osName := runtime.GOOS
	if osName != "" {
		osName = strings.ToUpper(osName[:1]) + osName[1:]
	}
	return [][2]string{
		{"zookeeper.version", FullVersion()},
		{"host.name", host},
		{"java.version", runtime.Version()},
		{"java.vendor", "hutch (Go)"},
		{"java.home", runtime.GOROOT()},
		{"java.class.path", exe},
		{"java.library.path", ""},
		{"java.io.tmpdir", os.TempDir()},
		{"java.compiler", "<NA>"},
		{"os.name", osName},
		{"os.arch", runtime.GOARCH},
		{"os.version", kernelRelease()},
		{"user.name", name},
		{"user.home", home},
		{"user.dir", wd},
		{"os.memory.free", mb(ms.HeapIdle)},
		{"os.memory.max", mb(ms.Sys)},
		{"os.memory.total", mb(ms.HeapSys)},
	}
}

// kernelRelease reads the running kernel's release, as Java's os.version.
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
