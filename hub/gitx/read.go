package gitx

import (
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrTooBig: a file is larger than the caller's limit.
var ErrTooBig = errors.New("file too big")

// ReadFile reads the file at path (slash-separated, relative to the top) in
// commit sha, in-process. A path that is not a file in that commit (absent,
// a directory, a submodule) gives exists false and no error. A file over
// limit bytes is an ErrTooBig, with its size.
func ReadFile(r *Repo, sha, path string, limit int64) (data []byte, size int64, exists bool, err error) {
	if err := checkRev("commit", sha); err != nil {
		return nil, 0, false, err
	}
	repo, err := openGoGit(r.Top)
	if err != nil {
		return nil, 0, false, fmt.Errorf("read %s at %s: %w", path, sha, err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		return nil, 0, false, fmt.Errorf("read %s at %s: %w", path, sha, err)
	}
	f, err := c.File(path)
	switch {
	case errors.Is(err, object.ErrFileNotFound), errors.Is(err, object.ErrDirectoryNotFound), errors.Is(err, object.ErrEntryNotFound):
		return nil, 0, false, nil
	case err != nil:
		return nil, 0, false, fmt.Errorf("read %s at %s: %w", path, sha, err)
	}
	if !f.Mode.IsFile() {
		return nil, 0, false, nil
	}
	if f.Size > limit {
		return nil, f.Size, true, fmt.Errorf("%s is %d bytes at %s, over the %d-byte limit: %w", path, f.Size, sha[:min(12, len(sha))], limit, ErrTooBig)
	}
	rd, err := f.Reader()
	if err != nil {
		return nil, 0, false, fmt.Errorf("read %s at %s: %w", path, sha, err)
	}
	defer rd.Close()
	data, err = io.ReadAll(io.LimitReader(rd, limit+1))
	if err != nil {
		return nil, 0, false, fmt.Errorf("read %s at %s: %w", path, sha, err)
	}
	return data, int64(len(data)), true, nil
}

// TopEntries lists what is at the top of commit sha's tree, in-process:
// the regular files (and executables), where a project's manifests and
// lockfiles are looked for without reading each name that might be there,
// and every other entry (folders, links, submodules).
func TopEntries(r *Repo, sha string) (files, others map[string]bool, err error) {
	if err := checkRev("commit", sha); err != nil {
		return nil, nil, err
	}
	repo, err := openGoGit(r.Top)
	if err != nil {
		return nil, nil, fmt.Errorf("list the files of %s: %w", sha, err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		return nil, nil, fmt.Errorf("list the files of %s: %w", sha, err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, nil, fmt.Errorf("list the files of %s: %w", sha, err)
	}
	files, others = make(map[string]bool, len(t.Entries)), map[string]bool{}
	for _, e := range t.Entries {
		if e.Mode.IsFile() && e.Mode != filemode.Symlink {
			files[e.Name] = true
		} else {
			others[e.Name] = true
		}
	}
	return files, others, nil
}
