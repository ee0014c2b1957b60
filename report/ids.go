package report

import (
	"path/filepath"
	"strings"
)

// SanitizeID maps a name to the characters [A-Za-z0-9._-], replacing any
// other rune by '_', so it can name files and Hive partitions.
func SanitizeID(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// BaseID is a trace's id before clash resolution: its base name without
// extension, sanitized.
func BaseID(path string) string {
	base := filepath.Base(path)
	return SanitizeID(strings.TrimSuffix(base, filepath.Ext(base)))
}
