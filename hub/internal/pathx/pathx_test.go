package pathx

import "testing"

func TestUnder(t *testing.T) {
	for _, tc := range []struct {
		base, p, rel string
		ok           bool
	}{
		{"/a/proj", "/a/proj", ".", true},
		{"/a/proj", "/a/proj/sub/x", "sub/x", true},
		{"/a/proj", "/a/proj/../proj/x", "x", true},
		{"/a/proj", "/a/project", "", false}, // a shared prefix is not a parent
		{"/a/proj", "/a", "", false},
		{"/a/proj", "/a/proj/..", "", false},
		{"/a/proj", "/b/proj", "", false},
		{"/a/proj", "/a/proj/..x", "..x", true}, // a name that starts with dots
		{"/a/proj", "rel", "", false},           // relative against absolute
	} {
		if rel, ok := Under(tc.base, tc.p); rel != tc.rel || ok != tc.ok {
			t.Errorf("Under(%q, %q) = %q, %v; want %q, %v", tc.base, tc.p, rel, ok, tc.rel, tc.ok)
		}
	}
}
