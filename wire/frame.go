package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
)

// DefaultMaxFrame is ZooKeeper's default jute.maxbuffer (0xfffff). The real
// server closes a connection whose frame length exceeds it.
const DefaultMaxFrame = 0xfffff

// ErrFrameTooLarge is returned by ReadFrame for a length prefix that is
// negative or above the limit.
var ErrFrameTooLarge = errors.New("wire: frame length out of range")

// ReadFrame reads one length-prefixed frame from r and returns its body. The
// body is stored in buf when it fits, so the result aliases buf and is only
// valid until buf is reused; otherwise a new slice is allocated. A length
// outside [0, max] yields ErrFrameTooLarge before anything is allocated. A
// clean end of stream before the length yields io.EOF; one inside the frame
// yields io.ErrUnexpectedEOF.
func ReadFrame(r *bufio.Reader, max int, buf []byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:])))
	if n < 0 || n > max {
		return nil, ErrFrameTooLarge
	}
	if cap(buf) >= n {
		buf = buf[:n]
	} else {
		buf = make([]byte, n)
	}
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// Handshake sends req to a server as one frame and reads its
// ConnectResponse: a raw client's first exchange. The caller sets any
// deadline on the connection; the response is not judged here (timeout 0
// means the session is gone).
func Handshake(w io.Writer, r *bufio.Reader, req *ConnectRequest) (ConnectResponse, error) {
	var e Encoder
	at := e.BeginFrame()
	req.Encode(&e)
	e.EndFrame(at)
	if _, err := w.Write(e.Bytes()); err != nil {
		return ConnectResponse{}, err
	}
	body, err := ReadFrame(r, DefaultMaxFrame, nil)
	if err != nil {
		return ConnectResponse{}, err
	}
	var resp ConnectResponse
	d := NewDecoder(body)
	resp.Decode(d)
	return resp, d.Err()
}
