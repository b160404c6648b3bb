package realzk

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

func TestStartZooKeeper(t *testing.T) {
	s := Start(t, TickTime(500*time.Millisecond), Config("minSessionTimeout", "1000"))
	if !strings.HasPrefix(s.Addr, "127.0.0.1:") {
		t.Errorf("Addr = %q, want a loopback address", s.Addr)
	}
	srvr, err := FourLetterWord(s.Addr, "srvr", 10*time.Second)
	if err != nil {
		t.Fatalf("srvr: %v", err)
	}
	for _, want := range []string{"Zookeeper version: 3.8", "Mode: standalone"} {
		if !strings.Contains(srvr, want) {
			t.Errorf("srvr reply lacks %q:\n%s", want, srvr)
		}
	}
	// The options reached zoo.cfg: conf shows the effective values.
	conf, err := FourLetterWord(s.Addr, "conf", 10*time.Second)
	if err != nil {
		t.Fatalf("conf: %v", err)
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	for _, want := range []string{"tickTime=500", "minSessionTimeout=1000", "clientPort=" + port + "\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf reply lacks %q:\n%s", want, conf)
		}
	}

	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	assertGone(t, s)
}

func TestStartHutchBinary(t *testing.T) {
	bin := BuildHutch(t)
	if again := BuildHutch(t); again != bin {
		t.Errorf("second BuildHutch = %q, want the cached %q", again, bin)
	}
	s := StartHutchBinary(t, bin, "--log-level", "debug")
	reply, err := FourLetterWord(s.Addr, "ruok", 10*time.Second)
	if err != nil || reply != "imok" {
		t.Fatalf("ruok = %q, %v; want imok", reply, err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	assertGone(t, s)
}

// assertGone checks that a stopped server's process and port are gone.
func assertGone(t *testing.T, s *Server) {
	t.Helper()
	select {
	case <-s.Exited():
	default:
		t.Fatalf("pid %d still running after Stop", s.PID)
	}
	if err := syscall.Kill(s.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill(%d, 0) = %v, want ESRCH", s.PID, err)
	}
	if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Stop", s.Addr)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestFourLetterWordNoServer(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(FreePort(t))
	if _, err := FourLetterWord(addr, "ruok", time.Second); err == nil {
		t.Fatalf("ruok to %s (nothing listening) succeeded", addr)
	}
}

func TestFourLetterWordReadsUntilClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4)
		if _, err := c.Read(buf); err != nil || string(buf) != "srvr" {
			return
		}
		// Two writes: the reply must be read until EOF, not one segment.
		c.Write([]byte("Mode: "))
		c.Write([]byte("standalone\n"))
	}()
	got, err := FourLetterWord(ln.Addr().String(), "srvr", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got != "Mode: standalone\n" {
		t.Errorf("reply = %q", got)
	}
	<-done
}

func TestListensOn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if !listensOn(os.Getpid(), port) {
		t.Errorf("listensOn(self, %d) = false for our own listener", port)
	}
	if listensOn(os.Getpid(), FreePort(t)) {
		t.Error("listensOn(self, a free port) = true")
	}
	// pid 1 does not hold our listener.
	if _, err := os.ReadDir("/proc/1/fd"); err == nil && listensOn(1, port) {
		t.Errorf("listensOn(1, %d) = true for our listener", port)
	}
}
