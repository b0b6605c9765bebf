//go:build unix

package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteAndReplace: the file gets the bytes and the mode, a symlink at
// the path is replaced (its target untouched), a missing folder is an error,
// and no temporary file is left either way.
func TestWriteAndReplace(t *testing.T) {
	for name, write := range map[string]func(string, []byte, os.FileMode) error{"Write": Write, "Replace": Replace} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if err := write(path, []byte("one"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := write(path, []byte("two"), 0o640); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(path); string(b) != "two" {
				t.Errorf("content %q", b)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
				t.Errorf("mode %v", fi.Mode().Perm())
			}
			target := filepath.Join(t.TempDir(), "target")
			if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, "link")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			if err := write(link, []byte("new"), 0o644); err != nil {
				t.Fatal(err)
			}
			if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink != 0 {
				t.Error("the symlink was followed, not replaced")
			}
			if b, _ := os.ReadFile(target); string(b) != "keep" {
				t.Errorf("the link's target was written: %q", b)
			}
			if err := write(filepath.Join(dir, "no", "such"), []byte("x"), 0o600); err == nil {
				t.Error("a missing folder: no error")
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 2 {
				t.Errorf("left in the folder: %v", ents)
			}
		})
	}
}
