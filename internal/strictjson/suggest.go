package strictjson

import (
	"strings"
	"unicode/utf8"
)

// Closest returns the name in names closest to key when it is close enough
// to be a misspelling of it, else "": at most one edit (an insertion, a
// deletion, a substitution or two neighbours swapped) for keys of up to five
// letters, two up to eight, three beyond, and fewer edits than the key has
// letters ("c" is no misspelling of "a"); case does not count. Of equally
// close names the first wins.
func Closest(key string, names []string) string {
	n := utf8.RuneCountInString(key)
	limit := min(max(1, n/3), 3, n-1)
	best, bestD := "", limit+1
	k := []rune(strings.ToLower(key))
	for _, name := range names {
		if d := distance(k, []rune(strings.ToLower(name))); d < bestD {
			best, bestD = name, d
		}
	}
	return best
}

// distance is the optimal string alignment distance between a and b: the
// Levenshtein distance with the swap of two neighbouring runes as one edit.
func distance(a, b []rune) int {
	// Three rows: two back (for swaps), one back, this one.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
