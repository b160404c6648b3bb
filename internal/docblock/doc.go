// Package docblock reads the worked examples out of the project's
// documentation, so that tests run them as the docs show them and a doc
// that drifts from hutch fails a test.
package docblock
