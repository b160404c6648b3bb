package wire

import (
	"bufio"
	"errors"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// These tests put the real go-zookeeper client on one end of a pipe and a
// scripted server built from this package on the other, so every record is
// checked against an independent implementation in both directions.

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// scriptedServer answers go-zookeeper requests with canned replies and
// reports every request record it decoded on reqs.
type scriptedServer struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	e    Encoder
	zxid int64
	reqs chan any
	done chan struct{}
}

const (
	fakeSessionID = 0x5eed
	fakeTimeoutMs = 10000
)

func startScriptedServer(t *testing.T, conn net.Conn) *scriptedServer {
	t.Helper()
	s := &scriptedServer{t: t, conn: conn, r: bufio.NewReader(conn), reqs: make(chan any, 64), done: make(chan struct{})}
	go s.serve()
	return s
}

func (s *scriptedServer) send(hdr ReplyHeader, body Message) {
	s.e.Reset()
	at := s.e.BeginFrame()
	hdr.Encode(&s.e)
	if body != nil {
		body.Encode(&s.e)
	}
	s.e.EndFrame(at)
	if _, err := s.conn.Write(s.e.Bytes()); err != nil {
		s.t.Errorf("server write: %v", err)
	}
}

// decode decodes a request record and checks it used the whole frame, which
// is how a field-order or type mismatch with the client would show.
func (s *scriptedServer) decode(d *Decoder, m Message) bool {
	m.Decode(d)
	if d.Err() != nil || d.Remaining() != 0 {
		s.t.Errorf("decoding %T: err=%v, %d bytes left", m, d.Err(), d.Remaining())
		return false
	}
	s.reqs <- reflect.ValueOf(m).Elem().Interface()
	return true
}

func (s *scriptedServer) serve() {
	defer close(s.done)
	defer s.conn.Close()
	buf := make([]byte, 0, 512)

	frame, err := ReadFrame(s.r, DefaultMaxFrame, buf)
	if err != nil {
		s.t.Errorf("reading connect frame: %v", err)
		return
	}
	var cr ConnectRequest
	if !s.decode(NewDecoder(frame), &cr) {
		return
	}
	s.e.Reset()
	at := s.e.BeginFrame()
	(&ConnectResponse{Timeout: fakeTimeoutMs, SessionID: fakeSessionID, Passwd: []byte("0123456789abcdef")}).Encode(&s.e)
	s.e.EndFrame(at)
	if _, err := s.conn.Write(s.e.Bytes()); err != nil {
		s.t.Errorf("writing connect response: %v", err)
		return
	}

	for {
		frame, err := ReadFrame(s.r, DefaultMaxFrame, buf)
		if err != nil {
			return // the client hung up
		}
		d := NewDecoder(frame)
		var h RequestHeader
		h.Decode(d)
		if d.Err() != nil {
			s.t.Errorf("request header: %v", d.Err())
			return
		}
		s.zxid++
		rh := ReplyHeader{Xid: h.Xid, Zxid: s.zxid}
		switch h.Type {
		case OpPing:
			s.send(ReplyHeader{Xid: XidPing, Zxid: s.zxid}, nil)
		case OpCreate:
			var r CreateRequest
			if s.decode(d, &r) {
				s.send(rh, &CreateResponse{Path: r.Path + "0000000007"})
			}
		case OpCreateTTL:
			var r CreateTTLRequest
			if s.decode(d, &r) {
				s.send(rh, &Create2Response{Path: r.Path, Stat: testStat})
			}
		case OpGetData:
			var r PathWatchRequest
			if !s.decode(d, &r) {
				return
			}
			if r.Path == "/missing" {
				rh.Err = CodeNoNode
				s.send(rh, nil)
				continue
			}
			s.send(rh, &GetDataResponse{Data: []byte("hello"), Stat: testStat})
			if r.Watch {
				s.send(ReplyHeader{Xid: XidNotification, Zxid: -1},
					&WatcherEvent{Type: EventNodeDataChanged, State: StateSyncConnected, Path: r.Path})
			}
		case OpExists:
			var r PathWatchRequest
			if s.decode(d, &r) {
				s.send(rh, &StatResponse{Stat: testStat})
			}
		case OpGetChildren2:
			var r PathWatchRequest
			if s.decode(d, &r) {
				s.send(rh, &GetChildren2Response{Children: []string{"a", "b"}, Stat: testStat})
			}
		case OpSetData:
			var r SetDataRequest
			if s.decode(d, &r) {
				s.send(rh, &StatResponse{Stat: testStat})
			}
		case OpDelete:
			var r DeleteRequest
			if s.decode(d, &r) {
				s.send(rh, nil)
			}
		case OpGetACL:
			var r PathRequest
			if s.decode(d, &r) {
				s.send(rh, &GetACLResponse{ACL: testACL, Stat: testStat})
			}
		case OpSetACL:
			var r SetACLRequest
			if s.decode(d, &r) {
				s.send(rh, &StatResponse{Stat: testStat})
			}
		case OpSync:
			var r PathRequest
			if s.decode(d, &r) {
				s.send(rh, &PathResponse{Path: r.Path})
			}
		case OpAuth:
			var r AuthPacket
			if s.decode(d, &r) {
				s.send(rh, nil)
			}
		case OpMulti:
			s.multi(d, rh)
		case OpCloseSession:
			s.reqs <- h
			s.send(rh, nil)
			return
		default:
			s.t.Errorf("unexpected opcode %v", h.Type)
			return
		}
	}
}

// multi answers a multi request; a check of version 99 fails the whole
// transaction the way ZooKeeper reports it, with per-op error results.
func (s *scriptedServer) multi(d *Decoder, rh ReplyHeader) {
	var ops []any
	var types []OpCode
	fail := false
	for {
		var mh MultiHeader
		mh.Decode(d)
		if d.Err() != nil {
			s.t.Errorf("multi header: %v", d.Err())
			return
		}
		if mh.Done {
			ops = append(ops, mh)
			break
		}
		var m Message
		switch mh.Type {
		case OpCreate:
			m = new(CreateRequest)
		case OpDelete:
			m = new(DeleteRequest)
		case OpSetData:
			m = new(SetDataRequest)
		case OpCheck:
			m = new(CheckVersionRequest)
		default:
			s.t.Errorf("unexpected multi op %v", mh.Type)
			return
		}
		m.Decode(d)
		if d.Err() != nil {
			s.t.Errorf("multi op %v: %v", mh.Type, d.Err())
			return
		}
		if c, ok := m.(*CheckVersionRequest); ok && c.Version == 99 {
			fail = true
		}
		ops = append(ops, mh, reflect.ValueOf(m).Elem().Interface())
		types = append(types, mh.Type)
	}
	if d.Remaining() != 0 {
		s.t.Errorf("multi left %d bytes", d.Remaining())
	}
	s.reqs <- ops

	s.e.Reset()
	at := s.e.BeginFrame()
	rh.Encode(&s.e)
	// As in ZooKeeper, ops before the failing one report OK, the failing
	// one its own code and later ones RUNTIMEINCONSISTENCY.
	code := CodeOK
	for _, op := range types {
		if fail {
			if op == OpCheck {
				code = CodeBadVersion
			} else if code != CodeOK {
				code = CodeRuntimeInconsistency
			}
			(&MultiHeader{Type: OpError, Err: code}).Encode(&s.e)
			(&ErrorResult{Err: code}).Encode(&s.e)
			continue
		}
		(&MultiHeader{Type: op}).Encode(&s.e)
		switch op {
		case OpCreate:
			(&CreateResponse{Path: "/m"}).Encode(&s.e)
		case OpSetData:
			(&StatResponse{Stat: testStat}).Encode(&s.e)
		}
	}
	(&MultiHeader{Type: -1, Done: true, Err: -1}).Encode(&s.e)
	s.e.EndFrame(at)
	if _, err := s.conn.Write(s.e.Bytes()); err != nil {
		s.t.Errorf("server write: %v", err)
	}
}

func toZKStat(s Stat) zk.Stat {
	return zk.Stat{
		Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime,
		Version: s.Version, Cversion: s.Cversion, Aversion: s.Aversion,
		EphemeralOwner: s.EphemeralOwner, DataLength: s.DataLength,
		NumChildren: s.NumChildren, Pzxid: s.Pzxid,
	}
}

func expectRequest(t testing.TB, s *scriptedServer, want any) {
	t.Helper()
	select {
	case got := <-s.reqs:
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("server decoded\n %#v\nwant\n %#v", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("server decoded nothing, want %#v", want)
	}
}

func checkStat(t testing.TB, got *zk.Stat) {
	t.Helper()
	if got == nil || *got != toZKStat(testStat) {
		t.Fatalf("client decoded stat %+v, want %+v", got, toZKStat(testStat))
	}
}

func TestGoZookeeperClient(t *testing.T) {
	clientEnd, serverEnd := net.Pipe()
	dialed := false
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		if dialed {
			return nil, errors.New("scripted server accepts one connection")
		}
		dialed = true
		return clientEnd, nil
	}
	srv := startScriptedServer(t, serverEnd)

	c, events, err := zk.Connect([]string{"127.0.0.1:2181"}, fakeTimeoutMs*time.Millisecond,
		zk.WithDialer(dialer), zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Close()
		<-srv.done
	}()

	// go-zookeeper sends no readOnly flag, so this also covers old clients.
	expectRequest(t, srv, ConnectRequest{Timeout: fakeTimeoutMs, Passwd: make([]byte, 16)})
	waitForSession(t, events)
	if c.SessionID() != fakeSessionID {
		t.Fatalf("client session id %#x, want %#x", c.SessionID(), fakeSessionID)
	}

	openACL := []ACL{{Perms: PermAll, ID: ID{Scheme: "world", ID: "anyone"}}}

	t.Run("create", func(t *testing.T) {
		p, err := c.Create("/a", []byte("hi"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		if err != nil || p != "/a0000000007" {
			t.Fatalf("Create = %q, %v", p, err)
		}
		expectRequest(t, srv, CreateRequest{Path: "/a", Data: []byte("hi"), ACL: openACL, Flags: ModeEphemeral})
	})
	t.Run("createTTL", func(t *testing.T) {
		p, err := c.CreateTTL("/t", []byte{}, zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Minute)
		if err != nil || p != "/t" {
			t.Fatalf("CreateTTL = %q, %v", p, err)
		}
		expectRequest(t, srv, CreateTTLRequest{Path: "/t", Data: []byte{}, ACL: openACL, Flags: ModePersistentWithTTL, TTL: 60000})
	})
	t.Run("get", func(t *testing.T) {
		data, st, err := c.Get("/a")
		if err != nil || string(data) != "hello" {
			t.Fatalf("Get = %q, %v", data, err)
		}
		checkStat(t, st)
		expectRequest(t, srv, PathWatchRequest{Path: "/a"})
	})
	t.Run("get error code", func(t *testing.T) {
		if _, _, err := c.Get("/missing"); !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("Get(/missing) err = %v, want ErrNoNode", err)
		}
		expectRequest(t, srv, PathWatchRequest{Path: "/missing"})
	})
	t.Run("exists", func(t *testing.T) {
		ok, st, err := c.Exists("/a")
		if err != nil || !ok {
			t.Fatalf("Exists = %v, %v", ok, err)
		}
		checkStat(t, st)
		expectRequest(t, srv, PathWatchRequest{Path: "/a"})
	})
	t.Run("children", func(t *testing.T) {
		kids, st, err := c.Children("/")
		if err != nil || !reflect.DeepEqual(kids, []string{"a", "b"}) {
			t.Fatalf("Children = %q, %v", kids, err)
		}
		checkStat(t, st)
		expectRequest(t, srv, PathWatchRequest{Path: "/"})
	})
	t.Run("set", func(t *testing.T) {
		st, err := c.Set("/a", []byte("new"), 4)
		if err != nil {
			t.Fatal(err)
		}
		checkStat(t, st)
		expectRequest(t, srv, SetDataRequest{Path: "/a", Data: []byte("new"), Version: 4})
	})
	t.Run("acl", func(t *testing.T) {
		acl, st, err := c.GetACL("/a")
		if err != nil {
			t.Fatal(err)
		}
		checkStat(t, st)
		want := []zk.ACL{{Perms: testACL[0].Perms, Scheme: "world", ID: "anyone"}, {Perms: testACL[1].Perms, Scheme: "digest", ID: "u:hash="}}
		if !reflect.DeepEqual(acl, want) {
			t.Fatalf("GetACL = %+v, want %+v", acl, want)
		}
		expectRequest(t, srv, PathRequest{Path: "/a"})

		if _, err := c.SetACL("/a", zk.DigestACL(zk.PermRead, "u", "p"), 2); err != nil {
			t.Fatal(err)
		}
		expectRequest(t, srv, SetACLRequest{Path: "/a", Version: 2, ACL: []ACL{{Perms: PermRead,
			ID: ID{Scheme: "digest", ID: zk.DigestACL(zk.PermRead, "u", "p")[0].ID}}}})
	})
	t.Run("sync", func(t *testing.T) {
		p, err := c.Sync("/a")
		if err != nil || p != "/a" {
			t.Fatalf("Sync = %q, %v", p, err)
		}
		expectRequest(t, srv, PathRequest{Path: "/a"})
	})
	t.Run("auth", func(t *testing.T) {
		if err := c.AddAuth("digest", []byte("u:p")); err != nil {
			t.Fatal(err)
		}
		expectRequest(t, srv, AuthPacket{Scheme: "digest", Auth: []byte("u:p")})
	})
	t.Run("multi", func(t *testing.T) {
		res, err := c.Multi(
			&zk.CreateRequest{Path: "/m", Data: []byte("d"), Acl: zk.WorldACL(zk.PermAll)},
			&zk.SetDataRequest{Path: "/m", Data: []byte("e"), Version: 1},
			&zk.CheckVersionRequest{Path: "/m", Version: 2},
			&zk.DeleteRequest{Path: "/m", Version: 3},
		)
		if err != nil || len(res) != 4 {
			t.Fatalf("Multi = %+v, %v", res, err)
		}
		if res[0].String != "/m" || res[0].Error != nil {
			t.Fatalf("create result %+v", res[0])
		}
		checkStat(t, res[1].Stat)
		expectRequest(t, srv, []any{
			MultiHeader{Type: OpCreate, Err: -1}, CreateRequest{Path: "/m", Data: []byte("d"), ACL: openACL},
			MultiHeader{Type: OpSetData, Err: -1}, SetDataRequest{Path: "/m", Data: []byte("e"), Version: 1},
			MultiHeader{Type: OpCheck, Err: -1}, CheckVersionRequest{Path: "/m", Version: 2},
			MultiHeader{Type: OpDelete, Err: -1}, DeleteRequest{Path: "/m", Version: 3},
			MultiHeader{Type: -1, Done: true, Err: -1},
		})
	})
	t.Run("multi failure", func(t *testing.T) {
		res, err := c.Multi(
			&zk.DeleteRequest{Path: "/m", Version: -1},
			&zk.CheckVersionRequest{Path: "/m", Version: 99},
		)
		if !errors.Is(err, zk.ErrBadVersion) || len(res) != 2 {
			t.Fatalf("Multi = %+v, %v", res, err)
		}
		if res[0].Error != nil || !errors.Is(res[1].Error, zk.ErrBadVersion) {
			t.Fatalf("results %+v, want OK then ErrBadVersion", res)
		}
		<-srv.reqs
	})
	t.Run("watch", func(t *testing.T) {
		_, _, ch, err := c.GetW("/w")
		if err != nil {
			t.Fatal(err)
		}
		expectRequest(t, srv, PathWatchRequest{Path: "/w", Watch: true})
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeDataChanged || ev.Path != "/w" || ev.State != zk.StateSyncConnected {
				t.Fatalf("watch event %+v", ev)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no watch event")
		}
	})
	t.Run("delete", func(t *testing.T) {
		if err := c.Delete("/a", 3); err != nil {
			t.Fatal(err)
		}
		expectRequest(t, srv, DeleteRequest{Path: "/a", Version: 3})
	})
	t.Run("close", func(t *testing.T) {
		c.Close()
		select {
		case got := <-srv.reqs:
			// go-zookeeper numbers requests itself, so only the opcode is checked.
			if h, ok := got.(RequestHeader); !ok || h.Type != OpCloseSession {
				t.Fatalf("server decoded %#v, want a closeSession header", got)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no closeSession request")
		}
	})
}

func waitForSession(t testing.TB, events <-chan zk.Event) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return
			}
		case <-timeout:
			t.Fatal("client never reported a session")
		}
	}
}
