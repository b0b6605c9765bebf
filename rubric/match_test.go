package rubric

import "testing"

func TestMatchPath(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"go.mod", "go.mod", true},
		{"go.mod", "tools/go.mod", false},
		{"./go.mod", "go.mod", true},
		{"docs", "docs/a.md", true},
		{"docs/", "docs/a/b.md", true},
		{"docs/", "docs", true},
		{"docs/", "docsx/a.md", false},
		{"hub/gitx", "hub/gitx/diff.go", true},
		{"hub/gitx", "hub/gitxx/diff.go", false},
		{"hub/*", "hub/gitx/diff.go", true},
		{"hub/*.go", "hub/x.go", true},
		{"hub/*.go", "hub/gitx/x.go", false},
		{"*.md", "README.md", true},
		{"*.md", "docs/deep/x.md", true},
		{"*.md", "docs/x.go", false},
		{"*_test.go", "hub/gitx/git_test.go", true},
		{"**", "anything/at/all.go", true},
		{"**/*.go", "main.go", true},
		{"**/*.go", "a/b/c.go", true},
		{"**/*.go", "a/b/c.md", false},
		{"docs/**", "docs/a/b.md", true},
		{"docs/**", "src/docs/a.md", false},
		{"a/**/z.go", "a/z.go", true},
		{"a/**/z.go", "a/b/c/z.go", true},
		{"a/**/z.go", "a/b/c/y.go", false},
		{"**/testdata/**", "x/testdata/y/z.txt", true},
		{"cmd/hub?/main.go", "cmd/hub2/main.go", true},
		{"cmd/[ab]*.go", "cmd/b1.go", true},
		{"cmd/[", "cmd/[", false},
		{"", "go.mod", false},
		{"go.mod", "", false},
		{"Go.mod", "go.mod", false},
	}
	for _, tt := range tests {
		if got := matchPath(tt.pattern, tt.path); got != tt.want {
			t.Errorf("matchPath(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}
