// Package gen writes the editor's TypeScript types, docs/protocol.md and
// hub/protocol's typed servers, dispatchers and clients (dispatch_gen.go)
// from hub/protocol: the Go types give the shapes (by reflection, as
// encoding/json sees them), the Specs the methods and their effects, their
// source the comments and constants. `make protocol` writes the three
// files; a test fails when any is stale.
package gen

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// module is hub's module path; package dirs below are relative to the repo root.
const module = "github.com/hub-agents/hub/"

// sourcePkgs are the packages whose types cross the wire.
var sourcePkgs = []string{"hub/protocol", "router"}

// typeDoc is what the source says of one type.
type typeDoc struct {
	doc    string
	fields map[string]string // Go field name → comment
}

// constant is one package-level constant, in source order.
type constDecl struct {
	name  string
	typ   string // the named type, or "" for an untyped constant
	value constant.Value
	doc   string
}

// source is the parsed comments and constants of sourcePkgs.
type source struct {
	types  map[string]typeDoc // "hub/protocol.JobStatus" → docs
	consts []constDecl        // hub/protocol's, in source order
}

func parseSource(root string) (*source, error) {
	src := &source{types: map[string]typeDoc{}}
	for _, dir := range sourcePkgs {
		fset := token.NewFileSet()
		names, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		var files []*ast.File
		for _, n := range names {
			if strings.HasSuffix(n, "_test.go") {
				continue
			}
			b, err := os.ReadFile(n)
			if err != nil {
				return nil, err
			}
			f, err := parser.ParseFile(fset, n, b, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no Go files in %s; run the generator from the repository's top", filepath.Join(root, dir))
		}
		for _, f := range files {
			src.addTypes(dir, f)
		}
		if dir == "hub/protocol" {
			if err := src.addConsts(files); err != nil {
				return nil, err
			}
		}
	}
	return src, nil
}

func (s *source) addTypes(dir string, f *ast.File) {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, sp := range g.Specs {
			ts := sp.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil && len(g.Specs) == 1 {
				doc = g.Doc
			}
			td := typeDoc{doc: clean(doc), fields: map[string]string{}}
			if st, ok := ts.Type.(*ast.StructType); ok {
				for _, fl := range st.Fields.List {
					c := clean(fl.Doc)
					if tail := clean(fl.Comment); tail != "" {
						c = strings.TrimSpace(c + " " + tail)
					}
					for _, n := range fl.Names {
						td.fields[n.Name] = c
					}
					if len(fl.Names) == 0 { // embedded
						td.fields[typeName(fl.Type)] = c
					}
				}
			}
			s.types[dir+"."+ts.Name.Name] = td
		}
	}
}

func typeName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return typeName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		return t.Sel.Name
	}
	return ""
}

// addConsts evaluates the package's constants: literals, other constants of
// the package, and the operators on them.
func (s *source) addConsts(files []*ast.File) error {
	type pending struct {
		spec *ast.ValueSpec
		doc  string
		typ  string
	}
	var specs []pending
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				doc := clean(vs.Comment)
				if doc == "" {
					doc = clean(vs.Doc)
				}
				if doc == "" && len(g.Specs) == 1 {
					doc = clean(g.Doc)
				}
				specs = append(specs, pending{vs, doc, typeName(vs.Type)})
			}
		}
	}
	vals := map[string]constant.Value{}
	var eval func(ast.Expr) (constant.Value, error)
	eval = func(e ast.Expr) (constant.Value, error) {
		switch x := e.(type) {
		case *ast.BasicLit:
			return constant.MakeFromLiteral(x.Value, x.Kind, 0), nil
		case *ast.ParenExpr:
			return eval(x.X)
		case *ast.Ident:
			if v, ok := vals[x.Name]; ok {
				return v, nil
			}
			return nil, fmt.Errorf("constant %s is used before it is defined, or is not a constant of the package", x.Name)
		case *ast.UnaryExpr:
			v, err := eval(x.X)
			if err != nil {
				return nil, err
			}
			return constant.UnaryOp(x.Op, v, 0), nil
		case *ast.BinaryExpr:
			a, err := eval(x.X)
			if err != nil {
				return nil, err
			}
			b, err := eval(x.Y)
			if err != nil {
				return nil, err
			}
			if x.Op == token.SHL || x.Op == token.SHR {
				n, _ := constant.Uint64Val(b)
				return constant.Shift(a, x.Op, uint(n)), nil
			}
			return constant.BinaryOp(a, x.Op, b), nil
		}
		return nil, fmt.Errorf("cannot evaluate the constant expression %T", e)
	}
	// Constants may refer to ones defined in a later file: evaluate until
	// nothing changes.
	left := specs
	for len(left) > 0 {
		var next []pending
		var lastErr error
		for _, p := range left {
			ok := true
			for i, n := range p.spec.Names {
				if i >= len(p.spec.Values) {
					return fmt.Errorf("constant %s: iota and implicit repetition are not supported by the generator", n.Name)
				}
				v, err := eval(p.spec.Values[i])
				if err != nil {
					ok, lastErr = false, err
					break
				}
				vals[n.Name] = v
			}
			if !ok {
				next = append(next, p)
			}
		}
		if len(next) == len(left) {
			return lastErr
		}
		left = next
	}
	for _, p := range specs {
		for _, n := range p.spec.Names {
			s.consts = append(s.consts, constDecl{name: n.Name, typ: p.typ, value: vals[n.Name], doc: p.doc})
		}
	}
	return nil
}

// clean flattens a comment group into one paragraph.
func clean(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return strings.Join(strings.Fields(g.Text()), " ")
}

// constsWithPrefix returns the string or number constants named prefix+X, in source order.
func (s *source) constsWithPrefix(prefix string) []constDecl {
	var out []constDecl
	for _, c := range s.consts {
		if strings.HasPrefix(c.name, prefix) && len(c.name) > len(prefix) {
			out = append(out, c)
		}
	}
	return out
}

// literal writes a constant as TypeScript (and JSON) writes it.
func literal(v constant.Value) string {
	switch v.Kind() {
	case constant.String:
		b, _ := json.Marshal(constant.StringVal(v))
		return string(b)
	case constant.Int, constant.Float:
		return v.ExactString()
	case constant.Bool:
		return strconv.FormatBool(constant.BoolVal(v))
	}
	return v.String()
}
