package zoocfg

import (
	"errors"
	"io"

	"github.com/hutchzk/hutch/javaprops"
)

// Property is one key=value of a properties file, with the line it starts on.
type Property = javaprops.Property

// ReadProperties decodes the Java properties format (javaprops.Read); a
// line that does not decode is an *Error naming it.
func ReadProperties(r io.Reader) ([]Property, error) {
	props, err := javaprops.Read(r)
	var le *javaprops.LineError
	if errors.As(err, &le) {
		return nil, &Error{Line: le.Line, Err: le.Err}
	}
	return props, err
}

// maxFileSize bounds what the JAAS reader reads, as javaprops bounds a
// properties file: a path given by mistake must not fill memory.
const maxFileSize = 4 << 20
