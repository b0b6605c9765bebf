package model

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Retry is an http.RoundTripper for model calls: it tries again on 429,
// on the 5xx answers providers give when busy (500, 502, 503, 504, 529),
// and on attempts that time out or lose their connection, with exponential
// backoff and full jitter, honouring Retry-After. It gives up at once when
// the caller's context is done. It is safe for concurrent use.
type Retry struct {
	Base http.RoundTripper // default http.DefaultTransport
	// Attempts is the most tries per call, the first included (default 4).
	Attempts int
	// MinDelay and MaxDelay bound the wait between tries (default 500ms, 30s).
	MinDelay, MaxDelay time.Duration
	// AttemptTimeout bounds one try, headers and body (default 5m).
	AttemptTimeout time.Duration
	// OnRetry, if set, hears of each retry before its wait.
	OnRetry func(attempt int, why string, wait time.Duration)
}

// maxBody bounds one answer read into memory.
const maxBody = 32 << 20

func (r *Retry) attempts() int {
	if r.Attempts > 0 {
		return r.Attempts
	}
	return 4
}

func retryableStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout, 529:
		return true
	}
	return false
}

// RoundTrip implements http.RoundTripper.
func (r *Retry) RoundTrip(req *http.Request) (*http.Response, error) {
	base := r.Base
	if base == nil {
		base = http.DefaultTransport
	}
	parent := req.Context()
	for attempt := 1; ; attempt++ {
		if attempt > 1 && req.Body != nil {
			if req.GetBody == nil {
				return nil, errors.New("model call: the request body cannot be sent again for a retry")
			}
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("model call: rewind the request body: %w", err)
			}
			req = req.Clone(parent)
			req.Body = body
		}
		timeout := r.AttemptTimeout
		if timeout <= 0 {
			timeout = 5 * time.Minute
		}
		actx, cancel := context.WithTimeout(parent, timeout)
		resp, err := base.RoundTrip(req.WithContext(actx))
		last := attempt >= r.attempts()
		var why string
		var hint time.Duration
		switch {
		case parent.Err() != nil:
			cancel()
			if err == nil {
				resp.Body.Close()
			}
			return nil, parent.Err()
		case err != nil:
			cancel()
			if !transient(err, actx) || last {
				return nil, err
			}
			why = err.Error()
		case retryableStatus(resp.StatusCode) && !last:
			hint = retryAfter(resp.Header.Get("Retry-After"))
			why = resp.Status
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			cancel()
		default:
			// Read the whole answer here, so a connection cut mid-body is
			// retried like any other lost attempt (calls are not streamed).
			body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
			resp.Body.Close()
			cancel()
			switch {
			case rerr == nil && len(body) > maxBody:
				return nil, fmt.Errorf("model call: the answer is over %d MiB; refusing it", maxBody>>20)
			case rerr == nil:
				resp.Body = io.NopCloser(bytes.NewReader(body))
				resp.ContentLength = int64(len(body))
				return resp, nil
			case parent.Err() != nil:
				return nil, parent.Err()
			case last:
				return nil, fmt.Errorf("model call: the answer was cut off: %w", rerr)
			}
			why = "answer cut off: " + rerr.Error()
		}
		wait := r.backoff(attempt, hint)
		if r.OnRetry != nil {
			r.OnRetry(attempt, why, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-parent.Done():
			t.Stop()
			return nil, parent.Err()
		case <-t.C:
		}
	}
}

// backoff is full jitter over min·2^(n-1), capped, or the server's hint when longer.
func (r *Retry) backoff(attempt int, hint time.Duration) time.Duration {
	lo, hi := r.MinDelay, r.MaxDelay
	if lo <= 0 {
		lo = 500 * time.Millisecond
	}
	if hi <= 0 {
		hi = 30 * time.Second
	}
	ceil := lo << min(attempt-1, 16)
	if ceil > hi || ceil <= 0 {
		ceil = hi
	}
	d := lo + time.Duration(rand.Int64N(int64(ceil-lo)+1))
	if hint > d {
		d = min(hint, hi)
	}
	return d
}

// transient reports whether a transport error is worth another try: the
// attempt's own timeout, a reset or refused connection, an unexpected EOF.
func transient(err error, actx context.Context) bool {
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// authTransport sets each request's credentials from an Authorizer, and
// after a 401 asks it for fresh ones and sends the request once more.
type authTransport struct {
	base http.RoundTripper
	auth Authorizer
}

func (a authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if err := a.auth.Authorize(req.Context(), r.Header, false); err != nil {
		return nil, err
	}
	resp, err := a.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || (req.Body != nil && req.GetBody == nil) {
		return resp, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	r = req.Clone(req.Context())
	if req.GetBody != nil {
		if r.Body, err = req.GetBody(); err != nil {
			return nil, fmt.Errorf("model call: rewind the request body: %w", err)
		}
	}
	if err := a.auth.Authorize(req.Context(), r.Header, true); err != nil {
		return nil, err
	}
	return a.base.RoundTrip(r)
}
