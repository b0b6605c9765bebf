package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock restricts "classic" TCP only: a Multipath TCP socket
// (socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP)) binds and connects past
// it, and Go's net.Listen makes one by default since Go 1.24. So wherever
// the sandbox restricts TCP with Landlock (untrusted's every bind and
// connect, isolated's port fence) a seccomp filter also makes creating an
// MPTCP socket fail with EPROTONOSUPPORT, as on a kernel without MPTCP:
// programs fall back to plain TCP (Go's net package does), which Landlock
// holds. See https://github.com/landlock-lsm/linux/issues/54.

// seccompArch is what the filter needs of an architecture: its audit
// arch, the numbers of socket(2) natively, and those of its 32-bit compat
// mode (socketcall(2), whose arguments seccomp cannot read, is refused
// its SYS_SOCKET call entirely there).
type seccompArch struct {
	native           uint32
	socket           []uint32
	compat           uint32
	compatSocket     uint32
	compatSocketcall uint32
}

// The filter reads the low 32 bits of arguments, so only little-endian
// architectures are listed.
var seccompArchs = map[string]seccompArch{
	"amd64":   {native: unix.AUDIT_ARCH_X86_64, socket: []uint32{41, 41 | 0x40000000 /* x32 */}, compat: unix.AUDIT_ARCH_I386, compatSocket: 359, compatSocketcall: 102},
	"arm64":   {native: unix.AUDIT_ARCH_AARCH64, socket: []uint32{198}, compat: unix.AUDIT_ARCH_ARM, compatSocket: 281},
	"riscv64": {native: unix.AUDIT_ARCH_RISCV64, socket: []uint32{198}},
}

// mptcpFilterable reports whether denyMPTCP works on this architecture.
func mptcpFilterable() bool {
	_, ok := seccompArchs[runtime.GOARCH]
	return ok
}

var errNoFilter = errors.New("no seccomp filter against Multipath TCP for " + runtime.GOARCH)

// denyMPTCP installs the filter on every thread of this process; it
// persists across exec into the command and all it starts.
func denyMPTCP() error {
	a, ok := seccompArchs[runtime.GOARCH]
	if !ok {
		return errNoFilter
	}
	prog, err := mptcpFilter(a)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	switch {
	case errno != 0:
		return fmt.Errorf("seccomp: %w", errno)
	case r != 0:
		return fmt.Errorf("seccomp: thread %d could not take the filter", r)
	}
	return nil
}

// seccomp_data offsets: the syscall number, the audit arch, and the low
// halves (little-endian) of the first and third arguments.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg2 = 32
)

// mptcpFilter is the classic BPF program: socket(AF_INET or AF_INET6, *,
// IPPROTO_MPTCP) fails with EPROTONOSUPPORT; everything else is allowed.
func mptcpFilter(a seccompArch) ([]unix.SockFilter, error) {
	var b bpf
	b.ld(offArch)
	b.jeq(a.native, "", "foreign")
	b.ld(offNr)
	for _, nr := range a.socket {
		b.jeq(nr, "socket", "")
	}
	b.ret(unix.SECCOMP_RET_ALLOW)
	b.label("foreign")
	if a.compat != 0 {
		b.jeq(a.compat, "", "allow")
		b.ld(offNr)
		if a.compatSocketcall != 0 {
			b.jeq(a.compatSocket, "socket", "")
			b.jeq(a.compatSocketcall, "", "allow")
			b.ld(offArg0)
			b.jeq(1 /* SYS_SOCKET */, "deny", "allow")
		} else {
			b.jeq(a.compatSocket, "socket", "allow")
		}
	} else {
		b.ret(unix.SECCOMP_RET_ALLOW)
	}
	b.label("socket")
	b.ld(offArg0)
	b.jeq(unix.AF_INET, "proto", "")
	b.jeq(unix.AF_INET6, "", "allow")
	b.label("proto")
	b.ld(offArg2)
	b.jeq(unix.IPPROTO_MPTCP, "deny", "allow")
	b.label("allow")
	b.ret(unix.SECCOMP_RET_ALLOW)
	b.label("deny")
	b.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT))
	return b.build()
}

// bpf assembles a classic BPF program whose jumps name labels ("": the
// next instruction).
type bpf struct {
	prog   []unix.SockFilter
	jumps  map[int][2]string
	labels map[string]int
}

func (b *bpf) ld(off uint32) {
	b.prog = append(b.prog, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

func (b *bpf) ret(k uint32) {
	b.prog = append(b.prog, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k})
}

func (b *bpf) jeq(k uint32, jt, jf string) {
	if b.jumps == nil {
		b.jumps = map[int][2]string{}
	}
	b.jumps[len(b.prog)] = [2]string{jt, jf}
	b.prog = append(b.prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k})
}

func (b *bpf) label(name string) {
	if b.labels == nil {
		b.labels = map[string]int{}
	}
	b.labels[name] = len(b.prog)
}

func (b *bpf) build() ([]unix.SockFilter, error) {
	off := func(i int, l string) (uint8, error) {
		if l == "" {
			return 0, nil
		}
		to, ok := b.labels[l]
		if !ok || to <= i || to-i-1 > 255 {
			return 0, fmt.Errorf("bpf: bad jump from %d to %q", i, l)
		}
		return uint8(to - i - 1), nil
	}
	for i, j := range b.jumps {
		var err1, err2 error
		b.prog[i].Jt, err1 = off(i, j[0])
		b.prog[i].Jf, err2 = off(i, j[1])
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
	}
	return b.prog, nil
}
