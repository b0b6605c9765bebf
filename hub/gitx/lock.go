package gitx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// lockRetry is how often LockRepo tries again while another holder has the lock.
const lockRetry = 10 * time.Millisecond

// LockRepo takes hub's exclusive, cross-process lock for r, so that hub
// processes sharing a repository make their worktrees and branches one at a
// time. The lock is a flock(2) on <lockDir>/<sha256(CommonDir)[:16]>.lock
// (lockDir is created 0700; nothing is written into the repository). It waits
// until the lock is free or ctx is done. flock locks belong to an open file,
// so a second LockRepo in the same process also waits. unlock is safe to call
// more than once.
func LockRepo(ctx context.Context, lockDir string, r *Repo) (unlock func(), err error) {
	if r == nil || r.CommonDir == "" {
		return nil, errors.New("lock repository: no repository; open it with gitx.Open first")
	}
	if err := os.MkdirAll(lockDir, 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", r.Top, err)
	}
	sum := sha256.Sum256([]byte(r.CommonDir))
	fl := flock.New(filepath.Join(lockDir, hex.EncodeToString(sum[:])[:16]+".lock"))
	ok, err := fl.TryLockContext(ctx, lockRetry)
	if err == nil && !ok {
		err = ctx.Err()
	}
	if err != nil {
		_ = fl.Close()
		return nil, fmt.Errorf("lock %s (%s): %w", r.Top, fl.Path(), err)
	}
	var once sync.Once
	return func() { once.Do(func() { _ = fl.Unlock() }) }, nil
}
