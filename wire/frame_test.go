package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

func frameReader(b []byte) *bufio.Reader {
	return bufio.NewReader(bytes.NewReader(b))
}

func TestReadFrame(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		max     int
		want    []byte
		wantErr error
	}{
		{"body", []byte{0, 0, 0, 3, 'a', 'b', 'c'}, 10, []byte("abc"), nil},
		{"empty body", []byte{0, 0, 0, 0}, 10, []byte{}, nil},
		{"at max", []byte{0, 0, 0, 2, 1, 2}, 2, []byte{1, 2}, nil},
		{"over max", []byte{0, 0, 0, 3, 1, 2, 3}, 2, nil, ErrFrameTooLarge},
		{"negative", []byte{0xff, 0xff, 0xff, 0xff}, 10, nil, ErrFrameTooLarge},
		// A four-letter word read as a length is far above any sane limit.
		{"ruok", []byte("ruok"), DefaultMaxFrame, nil, ErrFrameTooLarge},
		{"eof", nil, 10, nil, io.EOF},
		{"short length", []byte{0, 0}, 10, nil, io.ErrUnexpectedEOF},
		{"short body", []byte{0, 0, 0, 4, 1}, 10, nil, io.ErrUnexpectedEOF},
		{"missing body", []byte{0, 0, 0, 4}, 10, nil, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadFrame(frameReader(tt.in), tt.max, nil)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && !bytes.Equal(got, tt.want) {
				t.Fatalf("body = % x, want % x", got, tt.want)
			}
		})
	}
}

func TestReadFrameReusesBuffer(t *testing.T) {
	var e Encoder
	for _, body := range []string{"first", "2nd", "a much longer third frame"} {
		at := e.BeginFrame()
		e.String(body)
		e.EndFrame(at)
	}
	r := frameReader(e.Bytes())
	buf := make([]byte, 0, 16)
	for i, want := range []string{"first", "2nd", "a much longer third frame"} {
		got, err := ReadFrame(r, DefaultMaxFrame, buf)
		if err != nil {
			t.Fatal(err)
		}
		fitted := 4+len(want) <= cap(buf)
		if shared := &got[:1][0] == &buf[:1][0]; shared != fitted {
			t.Fatalf("frame %d: shares buf = %v, want %v", i, shared, fitted)
		}
		d := NewDecoder(got)
		if s := d.String(); s != want || d.Err() != nil {
			t.Fatalf("frame %d = %q, %v", i, s, d.Err())
		}
	}
	if _, err := ReadFrame(r, DefaultMaxFrame, buf); err != io.EOF {
		t.Fatalf("after last frame: %v, want io.EOF", err)
	}
}

func TestDefaultMaxFrameMatchesJute(t *testing.T) {
	if DefaultMaxFrame != 1048575 {
		t.Fatalf("DefaultMaxFrame = %d, want jute.maxbuffer default 1048575", DefaultMaxFrame)
	}
}
