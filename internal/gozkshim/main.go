// Command gozkshim is the zkServer.sh that go-zookeeper v1.0.4's
// integration tests find in $ZOOKEEPER_BIN_PATH: "zkServer.sh
// start-foreground <zoo.cfg>" runs hutch on that zoo.cfg
// (GOZKSHIM_SERVER=hutch, with HUTCH_BIN and HUTCH_PEER_SECRET), or
// Debian's ZooKeeper 3.8 through its own zkServer.sh (GOZKSHIM_SERVER=zookeeper,
// ZK_SERVER_SH), so the suite runs against both the same way.
//
// It does one thing besides: that suite decides a server is up with its
// FLWSrvr, whose pattern takes srvr's "built on 02/20/2014 09:09 GMT"
// (ZooKeeper 3.4 and 3.5) and not 3.8's "built on 2024-12-29 17:54 UTC",
// which hutch prints too, nor a version with characters other than
// letters, digits, dots and dashes, such as Debian's
// "3.8.0-${mvngit.commit.id}"; unchanged it never sees either server
// start. The shim therefore listens on the client port itself, relays
// every connection to the server on a private port untouched, and only in
// a srvr reply writes the version line the old way. The server runs as its
// child and dies with it (the suite stops a server by killing the shim).
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hutchzk/hutch/internal/freeport"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gozkshim:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 2 || args[0] != "start-foreground" {
		return errors.New("usage: zkServer.sh start-foreground <zoo.cfg>")
	}
	cfgFile := args[1]
	data, err := os.ReadFile(cfgFile)
	if err != nil {
		return err
	}
	port, err := clientPort(string(data))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	// The private port is picked free, then bound by the server a moment
	// later: another process may take it in between. A server that exits
	// before it serves gets another port, a few times.
	for attempt := 1; ; attempt++ {
		inner, err := freeport.Pick("127.0.0.1")
		if err != nil {
			return err
		}
		// The server's own copy of zoo.cfg, on the private port, next to
		// the original so that relative paths and dynamic files land alike.
		copyFile := filepath.Join(filepath.Dir(cfgFile), "zoo.shim.cfg")
		if err := os.WriteFile(copyFile, []byte(withClientPort(string(data), inner)), 0o644); err != nil {
			return err
		}
		cmd, err := serverCommand(copyFile)
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		// The server dies with the shim, however the shim dies.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return err
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		addr := "127.0.0.1:" + strconv.Itoa(inner)
		if ended, err := waitServing(addr, exited); ended {
			if attempt < 4 {
				fmt.Fprintf(os.Stderr, "gozkshim: the server exited before serving on %s (%v); trying another port\n", addr, err)
				continue
			}
			return err
		}
		go relay(ln, addr)
		return <-exited
	}
}

// waitServing waits until addr takes a connection, or the server exits
// first (ended, with its exit error).
func waitServing(addr string, exited <-chan error) (ended bool, err error) {
	for {
		select {
		case err := <-exited:
			return true, err
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return false, nil
		}
		select {
		case err := <-exited:
			return true, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// serverCommand runs hutch or ZooKeeper on cfg, as GOZKSHIM_SERVER says.
// The suite's JVM flags (the super user's digest) come in SERVER_JVMFLAGS;
// hutch takes the digest as a flag.
func serverCommand(cfg string) (*exec.Cmd, error) {
	switch os.Getenv("GOZKSHIM_SERVER") {
	case "hutch":
		args := []string{"--peer-secret-file", os.Getenv("HUTCH_PEER_SECRET")}
		if m := superDigest.FindStringSubmatch(os.Getenv("SERVER_JVMFLAGS")); m != nil {
			args = append(args, "--super-digest", m[1])
		}
		return exec.Command(os.Getenv("HUTCH_BIN"), append(args, cfg)...), nil
	case "zookeeper":
		return exec.Command(os.Getenv("ZK_SERVER_SH"), "start-foreground", cfg), nil
	}
	return nil, errors.New("GOZKSHIM_SERVER must be hutch or zookeeper")
}

var superDigest = regexp.MustCompile(`-Dzookeeper\.DigestAuthenticationProvider\.superDigest=(\S+)`)

// clientPort is zoo.cfg's clientPort (go-zookeeper's files set it and no
// clientPortAddress).
func clientPort(cfg string) (int, error) {
	for line := range strings.SplitSeq(cfg, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "clientPort="); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("zoo.cfg sets no clientPort")
}

// withClientPort is cfg with clientPort set to port and the client port
// named after ';' in server lines left alone (they are what clients are
// told, the shim's).
func withClientPort(cfg string, port int) string {
	var b strings.Builder
	for line := range strings.SplitSeq(cfg, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "clientPort=") {
			line = "clientPort=" + strconv.Itoa(port)
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// relay serves the client port: each connection is relayed to the server
// as is, but a srvr's answer has its build date rewritten.
func relay(ln net.Listener, server string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go serve(c, server)
	}
}

func serve(c net.Conn, server string) {
	defer c.Close()
	br := bufio.NewReader(c)
	first, _ := br.Peek(4)
	s, err := net.DialTimeout("tcp", server, 5*time.Second)
	if err != nil {
		return
	}
	defer s.Close()
	if string(first) == "srvr" {
		br.Discard(4)
		s.Write(first)
		reply, _ := io.ReadAll(s)
		c.Write(oldDate(reply))
		return
	}
	// The client's half-close reaches the server; the server's close,
	// or its dying, closes the client's connection at once, as a server
	// closing its socket would.
	go func() {
		io.Copy(s, br)
		s.(*net.TCPConn).CloseWrite()
	}()
	io.Copy(c, s)
}

var (
	versionLine = regexp.MustCompile(`^Zookeeper version: ([^,]*), built on (\d{4})-(\d\d)-(\d\d) (\d\d:\d\d) (\w+)`)
	notVersion  = regexp.MustCompile(`[^A-Za-z0-9.\-]`)
)

// oldDate writes srvr's "Zookeeper version: 3.8.0-${mvngit.commit.id},
// built on 2024-12-29 17:54 UTC" as "Zookeeper version:
// 3.8.0-mvngit.commit.id, built on 12/29/2024 17:54 UTC", the form
// FLWSrvr parses.
func oldDate(b []byte) []byte {
	m := versionLine.FindSubmatchIndex(b)
	if m == nil {
		return b
	}
	version := notVersion.ReplaceAll(b[m[2]:m[3]], nil)
	line := fmt.Sprintf("Zookeeper version: %s, built on %s/%s/%s %s %s", version,
		b[m[6]:m[7]], b[m[8]:m[9]], b[m[4]:m[5]], b[m[10]:m[11]], b[m[12]:m[13]])
	return append([]byte(line), b[m[1]:]...)
}
