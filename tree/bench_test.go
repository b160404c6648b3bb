package tree

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

func BenchmarkApplyCreate(b *testing.B) {
	tr := New()
	tr.Apply(&Txn{Zxid: 1, Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/b", ACL: open}})
	data := make([]byte, 100)
	paths := make([]string, b.N)
	for i := range paths {
		paths[i] = "/b/n" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := tr.Apply(&Txn{Zxid: int64(i + 2), Op: wire.OpCreate, Req: &wire.CreateRequest{Path: paths[i], Data: data, ACL: open}})
		if r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkApplySetData(b *testing.B) {
	tr := New()
	tr.Apply(&Txn{Zxid: 1, Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/b", ACL: open}})
	req := &wire.SetDataRequest{Path: "/b", Data: make([]byte, 100), Version: -1}
	txn := &Txn{Op: wire.OpSetData, Req: req}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		txn.Zxid = int64(i + 2)
		if r := tr.Apply(txn); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkApplyMulti(b *testing.B) {
	tr := New()
	tr.Apply(&Txn{Zxid: 1, Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/b", ACL: open}})
	req := &MultiRequest{Ops: []MultiOp{
		{wire.OpCheck, &wire.CheckVersionRequest{Path: "/b", Version: -1}},
		{wire.OpSetData, &wire.SetDataRequest{Path: "/b", Data: []byte("x"), Version: -1}},
		{wire.OpCreate, &wire.CreateRequest{Path: "/b/s-", ACL: open, Flags: wire.ModePersistentSequential}},
	}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := tr.Apply(&Txn{Zxid: int64(i + 2), Op: wire.OpMulti, Req: req}); r.MultiErr() != nil {
			b.Fatal(r.MultiErr())
		}
	}
}

func BenchmarkGetData(b *testing.B) {
	tr := New()
	for i := 0; i < 1000; i++ {
		tr.Apply(&Txn{Zxid: int64(i + 1), Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/n" + strconv.Itoa(i), Data: make([]byte, 100), ACL: open}})
	}
	auth := []wire.ID{localIP}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := tr.GetData("/n500", auth); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSnapshotRoundTrip(b *testing.B) {
	tr := New()
	for i := 0; i < 10000; i++ {
		tr.Apply(&Txn{Zxid: int64(i + 1), Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/n" + strconv.Itoa(i), Data: make([]byte, 100), ACL: open}})
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if err := tr.WriteSnapshot(&buf); err != nil {
			b.Fatal(err)
		}
		if _, err := Restore(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len())/10000, "bytes/node")
}
