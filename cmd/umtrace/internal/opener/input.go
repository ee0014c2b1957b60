package opener

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/umtrace/umtrace/cmd/umtrace/internal/exitcode"
)

// CheckInput returns an error (exitcode.BadInput, one line naming the file)
// when path exists but is not a regular file or a directory: a FIFO, a
// device or a socket, which umtrace never opens (a FIFO would block
// forever). A path that does not exist passes; opening it reports that.
func CheckInput(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() || st.IsDir() {
		return nil
	}
	what := "not a regular file"
	switch m := st.Mode(); {
	case m&os.ModeNamedPipe != 0:
		what = "a FIFO (named pipe)"
	case m&os.ModeCharDevice != 0:
		what = "a character device"
	case m&os.ModeDevice != 0:
		what = "a block device"
	case m&os.ModeSocket != 0:
		what = "a socket"
	}
	return &exitcode.Error{Code: exitcode.BadInput, Err: fmt.Errorf("%s: %s, not a regular file: umtrace reads traces only from regular files", path, what)}
}

// HashFile returns the hex SHA-256 of a file's content.
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
