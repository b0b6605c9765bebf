package install

import (
	"bytes"
	"fmt"
)

// The instructions for Codex and OpenCode go into their AGENTS.md as one
// block between two marker lines, so that install can update it and
// uninstall can take it out without touching the user's own text.

const (
	blockBegin     = "<!-- hub:begin"
	blockBeginLine = blockBegin + ` (written by "hub install"; "hub uninstall" removes this block) -->`
	blockEnd       = "<!-- hub:end -->"
)

// blockText is the whole block for body.
func blockText(body string) string {
	if body != "" && body[len(body)-1] != '\n' {
		body += "\n"
	}
	return blockBeginLine + "\n" + body + blockEnd + "\n"
}

// findBlock returns where the block is in src: from the start of its
// begin line to after its end line. Markers out of order are an error:
// editing around them could eat the user's text.
func findBlock(src []byte) (start, end int, found bool, err error) {
	start, end = -1, -1
	for pos, n := 0, 1; pos < len(src); n++ {
		next := bytes.IndexByte(src[pos:], '\n')
		lineEnd := len(src)
		if next >= 0 {
			lineEnd = pos + next + 1
		}
		line := bytes.TrimSpace(src[pos:lineEnd])
		switch {
		case bytes.HasPrefix(line, []byte(blockBegin)):
			if start >= 0 {
				return 0, 0, false, fmt.Errorf("line %d opens a second hub block (%s …); keep one and delete the other by hand", n, blockBegin)
			}
			start = pos
		case bytes.Equal(line, []byte(blockEnd)):
			if start < 0 {
				return 0, 0, false, fmt.Errorf("line %d closes a hub block (%s) that was never opened; delete that line by hand", n, blockEnd)
			}
			if end >= 0 {
				return 0, 0, false, fmt.Errorf("line %d closes a hub block a second time; delete that line by hand", n)
			}
			end = lineEnd
		}
		pos = lineEnd
	}
	if start >= 0 && end < 0 {
		return 0, 0, false, fmt.Errorf("a hub block is opened (%s …) but never closed (%s); fix the markers by hand", blockBegin, blockEnd)
	}
	return start, end, start >= 0, nil
}

// setBlock puts the block for body into src: in place of the one there,
// or at the end.
func setBlock(src []byte, body string) ([]byte, error) {
	start, end, found, err := findBlock(src)
	if err != nil {
		return nil, err
	}
	text := blockText(body)
	if !found {
		return append(append(bytes.Clone(src), separator(src)...), text...), nil
	}
	if end == len(src) && !bytes.HasSuffix(src, []byte("\n")) {
		text = text[:len(text)-1] // keep a file that ended without a line break so
	}
	return applySplice(src, splice{start, end, text}), nil
}

// removeBlock takes the block out of src, with the separator install put
// before it when it is at the end. It returns nil when hub made the file
// (prior, the file before hub first changed it, is nil) and nothing but
// blanks is left, so the file can go; and src unchanged when there is no
// block.
func removeBlock(src, prior []byte) ([]byte, error) {
	start, end, found, err := findBlock(src)
	if err != nil || !found {
		return src, err
	}
	out := applySplice(src, splice{start, end, ""})
	if start == len(out) {
		out = dropSeparator(out, prior)
	}
	if prior == nil && len(bytes.TrimSpace(out)) == 0 {
		return nil, nil
	}
	return out, nil
}

// holdsBlock reports whether src has hub's block.
func holdsBlock(src []byte) bool {
	_, _, found, err := findBlock(src)
	return err == nil && found
}

// blockBody returns what is between the markers, or "" when there is no block.
func blockBody(src []byte) (string, error) {
	start, end, found, err := findBlock(src)
	if err != nil || !found {
		return "", err
	}
	inner := src[start:end]
	inner = inner[bytes.IndexByte(inner, '\n')+1:]
	inner = inner[:bytes.LastIndex(inner, []byte(blockEnd))]
	return string(inner), nil
}
