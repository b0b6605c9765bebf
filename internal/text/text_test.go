package text

import "testing"

func TestShorten(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{OneLine("  a\tb\n\nc\x00d  ", 20), "a b c d"},
		{OneLine("abcdef", 4), "abc…"},
		{OneLine("héllo wörld", 5), "héll…"},
		{FirstLine("\n first line\nsecond", 40), "first line …"},
		{FirstLine("one", 40), "one"},
		{FirstLine("abcdefgh\nmore", 6), "abcde…"},
		{Clip("abc", 3), "abc"},
		{Clip("abcd", 3), "ab…"},
		{Clip("abcd", 0), ""},
		{ShortSHA("0123456789abcdef"), "0123456789"},
		{ShortSHA("abc"), "abc"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
