package rpc

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// Serve accepts connections on ln until ctx is done or ln is closed, and
// serves each with h and opts (see NewConn). onConn, if not nil, is called
// with each new Conn before any message of that connection reaches h, so it
// can SetValue or watch DisconnectNotify; it must not block.
//
// Serve returns nil when ln is closed or ctx is done; then it has closed ln.
// When ctx is done it also closes every connection before returning; when
// ln is closed by someone else, connections stay open until ctx is done.
// Accept failures from running out of file descriptors are retried with a
// backoff; any other Accept error is returned.
func Serve(ctx context.Context, ln net.Listener, h Handler, opts *Options, onConn func(*Conn)) error {
	var (
		connsMu sync.Mutex
		conns   = map[*Conn]struct{}{}
	)
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	log := opts.resolve().Logger

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				connsMu.Lock()
				all := make([]*Conn, 0, len(conns))
				for c := range conns {
					all = append(all, c)
				}
				connsMu.Unlock()
				for _, c := range all {
					c.Close()
				}
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !retryableAccept(err) {
				return err
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			if log != nil {
				log.Warn().Err(err).Dur("retry_in", backoff).Msg("rpc: accept failed")
			}
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			continue
		}
		backoff = 0
		newConn(ctx, nc, h, opts, func(c *Conn) {
			connsMu.Lock()
			conns[c] = struct{}{}
			connsMu.Unlock()
			go func() {
				<-c.DisconnectNotify()
				connsMu.Lock()
				delete(conns, c)
				connsMu.Unlock()
			}()
			if onConn != nil {
				onConn(c)
			}
		})
	}
}

func retryableAccept(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
