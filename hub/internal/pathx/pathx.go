// Package pathx holds the path checks several parts of hub make alike.
package pathx

import (
	"path/filepath"
	"strings"
)

// Under returns p relative to base and whether p is base or lies under
// it, lexically (resolve links first where they matter).
func Under(base, p string) (string, bool) {
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}
