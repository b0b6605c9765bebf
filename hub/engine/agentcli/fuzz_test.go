package agentcli

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzReadLine splits arbitrary bytes into lines as a run's reader does (with
// a small buffer, so that lines longer than it are reassembled), and puts
// each line on one line for the worker log as the recorder does. readLine
// must never panic or hang, must give back every byte in order, each line
// ending at its first newline; OneLine must give at most n runes with no
// line breaks or runs of spaces, the whole line when it fits.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("{\"type\":\"a\"}\n{\"type\":\"b\"}\n"), 400)
	f.Add([]byte("no newline at the end"), 5)
	f.Add([]byte("\n\n\r\n  \t\n"), 1)
	f.Add([]byte(strings.Repeat("a long line past the buffer ", 10)+"\nand \xffinvalid UTF-8 \u00e9\u00e9\n"), 12)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		br := bufio.NewReaderSize(bytes.NewReader(data), 16)
		var got []byte
		for i := 0; ; i++ {
			line, err := readLine(br)
			if i := bytes.IndexByte(line, '\n'); i >= 0 && i != len(line)-1 {
				t.Fatalf("line %q goes on past a newline", line)
			}
			if err == nil && !bytes.HasSuffix(line, []byte("\n")) {
				t.Fatalf("line %q returned without an error does not end with a newline", line)
			}
			got = append(got, line...)
			if err != nil {
				if err != io.EOF {
					t.Fatalf("readLine: %v", err)
				}
				break
			}
			if i > len(data) {
				t.Fatal("readLine returned more lines than there are bytes")
			}
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("lines joined = %q, want the input %q", got, data)
		}

		n = 1 + int(uint(n)%1000)
		s := string(data)
		one := OneLine(s, n)
		if c := utf8.RuneCountInString(one); c > n {
			t.Fatalf("OneLine(%q, %d) has %d runes", s, n, c)
		}
		if strings.ContainsAny(one, "\n\r\t") || strings.Contains(one, "  ") {
			t.Fatalf("OneLine(%q, %d) = %q, not one line", s, n, one)
		}
		if whole := strings.Join(strings.Fields(s), " "); utf8.RuneCountInString(whole) <= n && one != whole {
			t.Fatalf("OneLine(%q, %d) = %q, want the whole %q", s, n, one, whole)
		}
	})
}
