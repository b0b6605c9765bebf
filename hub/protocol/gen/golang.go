package gen

import (
	"bytes"
	"fmt"
	"go/constant"
	"go/format"
	"reflect"
	"strings"

	"github.com/hub-agents/hub/hub/protocol"
)

// GoPath is where the typed servers, dispatchers and clients are written.
const GoPath = "hub/protocol/dispatch_gen.go"

// GoTestPath is where the tests' typed client of the daemon is written.
const GoTestPath = "hub/internal/hubtest/daemon_gen.go"

// served is one party that serves requests: its interface, dispatcher and client.
type served struct {
	Party string // protocol.Party*
	Name  string // Daemon, Shim
	Doc   string
}

var servedParties = []served{
	{protocol.PartyDaemon, "Daemon", "the daemon (hub serve) serves: the requests clients, shims and workers send it"},
	{protocol.PartyShim, "Shim", "a job's shim serves on the job's socket: the worker's questions and progress, the daemon's replies, steering and stop"},
}

// goMethod is one request as the Go code names it.
type goMethod struct {
	Method string // job/start
	Const  string // MethodJobStart
	Name   string // JobStart
	Params string // StartParams
	Result string // StartResult
	Doc    string
}

// goMethods returns the requests party serves, in Specs order. A
// notification has no reply to type, and $/ methods belong to the
// transport (hub/rpc answers them), so neither is listed.
func goMethods(src *source, party string) ([]goMethod, error) {
	consts := map[string]string{}
	for _, c := range append(src.constsWithPrefix("Method"), src.constsWithPrefix("Notify")...) {
		consts[literal(c.value)] = c.name
	}
	var out []goMethod
	for _, s := range protocol.Specs {
		if s.To != party || s.Notification || strings.HasPrefix(s.Method, "$/") {
			continue
		}
		name, ok := consts[literal(constant.MakeString(s.Method))]
		if !ok || !strings.HasPrefix(name, "Method") {
			return nil, fmt.Errorf("request %s needs a Method… constant", s.Method)
		}
		pt, rt := reflect.TypeOf(s.Params), reflect.TypeOf(s.Result)
		for _, t := range []reflect.Type{pt, rt} {
			if t == nil || t.Kind() != reflect.Struct || t.PkgPath() != module+"hub/protocol" {
				return nil, fmt.Errorf("request %s: params and result must be struct types of hub/protocol, not %v", s.Method, t)
			}
		}
		doc, _, _ := strings.Cut(s.Doc, ". ")
		out = append(out, goMethod{Method: s.Method, Const: name, Name: strings.TrimPrefix(name, "Method"), Params: pt.Name(), Result: rt.Name(),
			Doc: strings.TrimSuffix(doc, ".") + "."})
	}
	return out, nil
}

// golang writes dispatch_gen.go: for each party that serves requests, an
// interface with one method per request, a dispatcher that decodes a
// request's params and calls it, and a typed client.
func golang(src *source) ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("// %s\n\npackage protocol\n\nimport \"context\"\n", header)
	p(`
// Caller sends a request and decodes its result into result: an rpc.Conn,
// a client.Client.
type Caller interface {
	Call(ctx context.Context, method string, params, result any) error
}
`)
	for _, sv := range servedParties {
		ms, err := goMethods(src, sv.Party)
		if err != nil {
			return nil, err
		}
		p("\n// %sServer is what %s.\ntype %sServer interface {\n", sv.Name, sv.Doc, sv.Name)
		for _, m := range ms {
			p("\t// %s (%s): %s\n\t%s(ctx context.Context, p %s) (*%s, error)\n", m.Name, m.Const, m.Doc, m.Name, m.Params, m.Result)
		}
		p("}\n")

		p(`
// Dispatch%[1]s decodes the params of a request to the %[2]s with decode and
// calls the %[1]sServer method it names. served is false, and nothing is
// called, for a method the %[2]s does not serve.
func Dispatch%[1]s(ctx context.Context, s %[1]sServer, method string, decode func(params any) error) (result any, served bool, err error) {
	switch method {
`, sv.Name, sv.Party)
		for _, m := range ms {
			p("\tcase %s:\n\t\tvar p %s\n\t\tif err := decode(&p); err != nil {\n\t\t\treturn nil, true, err\n\t\t}\n\t\tr, err := s.%s(ctx, p)\n\t\treturn r, true, err\n", m.Const, m.Params, m.Name)
		}
		p("\t}\n\treturn nil, false, nil\n}\n")

		p("\n// %[1]sMethods are the methods %[1]sServer serves, in Specs order.\nvar %[1]sMethods = []string{", sv.Name)
		for i, m := range ms {
			if i > 0 {
				p(", ")
			}
			p("%s", m.Const)
		}
		p("}\n")

		p("\n// %[1]sClient calls the %[2]s: one typed method per request of %[1]sServer.\ntype %[1]sClient struct{ C Caller }\n", sv.Name, sv.Party)
		for _, m := range ms {
			p("\n// %s sends %s.\nfunc (c %sClient) %s(ctx context.Context, p %s) (*%s, error) {\n\tvar r %s\n\tif err := c.C.Call(ctx, %s, p, &r); err != nil {\n\t\treturn nil, err\n\t}\n\treturn &r, nil\n}\n",
				m.Name, m.Const, sv.Name, m.Name, m.Params, m.Result, m.Result, m.Const)
		}

		p("\n// %[1]sSpec is the Spec of each request of %[1]sServer, by the name of its\n// %[1]sClient method: where code over a typed call (an MCP tool's hints)\n// reads what the call may change.\nvar %[1]sSpec = struct {\n", sv.Name)
		for _, m := range ms {
			p("\t%s Spec\n", m.Name)
		}
		p("}{\n")
		for _, m := range ms {
			p("\t%s: mustSpec(%s),\n", m.Name, m.Const)
		}
		p("}\n")
	}
	p(`
// mustSpec is the Spec of method; the generator listed only methods Specs has.
func mustSpec(method string) Spec {
	s, ok := SpecOf(method)
	if !ok {
		panic("protocol: no Spec for " + method + "; run ` + "`make protocol`" + `")
	}
	return s
}
`)
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format %s: %w\n%s", GoPath, err, b.Bytes())
	}
	return out, nil
}

// golangTest writes the tests' typed client of the daemon (hubtest.Daemon):
// one method per request of DaemonServer that returns the result, or fails
// the test the way hubtest.Call does.
func golangTest(src *source) ([]byte, error) {
	ms, err := goMethods(src, protocol.PartyDaemon)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("// %s\n\npackage hubtest\n\n", header)
	p(`import (
	"context"
	"testing"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// DaemonCalls calls the daemon for a test: one typed method per request of
// protocol.DaemonServer, which returns the result or, when the call fails,
// fails the test with the method, the error and its hint.
type DaemonCalls struct {
	t testing.TB
	c protocol.DaemonClient
}

// Daemon returns the typed calls of the daemon on c, failing t.
func Daemon(t testing.TB, c protocol.Caller) DaemonCalls {
	return DaemonCalls{t: t, c: protocol.DaemonClient{C: c}}
}
`)
	for _, m := range ms {
		p("\n// %[1]s sends %[2]s and fails the test if it fails.\nfunc (d DaemonCalls) %[1]s(ctx context.Context, p protocol.%[3]s) protocol.%[4]s {\n\td.t.Helper()\n\tr, err := d.c.%[1]s(ctx, p)\n\tif err != nil {\n\t\td.t.Fatalf(\"%%s: %%v (hint: %%s)\", protocol.DaemonSpec.%[1]s.Method, err, rpc.HintOf(err))\n\t}\n\treturn *r\n}\n",
			m.Name, m.Method, m.Params, m.Result)
	}
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format %s: %w\n%s", GoTestPath, err, b.Bytes())
	}
	return out, nil
}
